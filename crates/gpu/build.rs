//! Compiles the CPU reference of the GPU kernels (src/device/reference.c, which includes the
//! per-gate code the kernels run) with the system C compiler.

fn main() {
    println!("cargo:rerun-if-changed=src/device/halfgates.h");
    println!("cargo:rerun-if-changed=src/device/reference.c");
    cc::Build::new()
        .file("src/device/reference.c")
        .include("src/device")
        .opt_level(3)
        .warnings(true)
        .extra_warnings(true)
        .compile("pgc_gpu_reference");
}
