//! `pgc`: secure two-party computation with garbled circuits.

#[macro_use]
mod output;
mod bench;
mod bench_garbling;
mod bench_gpu;
mod commands;
mod compile;
mod demo;
mod experiments;
mod keygen;
mod plot;

use std::process::ExitCode;

// The fuzzing build's replayable entropy (`pgc_crypto::prg::fuzzing`, `--cfg fuzzing`) makes
// every "random" choice predictable: it must never reach a program that protects real data.
#[cfg(fuzzing)]
compile_error!("pgc must not be built with --cfg fuzzing: its randomness is replayable there");

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Args, Parser, Subcommand};

const ABOUT: &str = "\
pgc runs a computation between two parties who each hold private inputs: a C program or a \
Verilog design (compiled to a Boolean circuit) or a circuit file. Each party learns the outputs \
it is meant to see and nothing else about the other's inputs. By default this holds when both run pgc unmodified \
(semi-honest security); against a party running modified software, run both with --security \
malicious (cut-and-choose) or --security dual-execution, at a cost (see pgc run --help).

In a C program, parameters or locals named INPUT_A_x / INPUT_B_x are party A's / party B's \
private inputs; OUTPUT_x is revealed to both, OUTPUT_A_x only to A, OUTPUT_B_x only to B. A \
Verilog design's top-module ports follow the same names.

By default party A garbles the circuit and party B evaluates it (Yao's garbled circuits with \
free-XOR and half-gates; B's input labels arrive by IKNP oblivious transfer); --protocol gmw \
runs GMW instead, both parties holding XOR shares of every wire (semi-honest only).";

const AFTER_HELP: &str = "\
Quick start (two machines, a C program both have a copy of):
  both:       pgc keygen      (prints this party's fingerprint, pgc1-...; swap them)
  machine 1:  pgc run millionaires.c --party a --listen 0.0.0.0:7000 --input income=5000 \\
                --peer-key <B's fingerprint>
  machine 2:  pgc run millionaires.c --party b --connect machine1:7000 --input income=7000 \\
                --peer-key <A's fingerprint>
Both print OUTPUT_result = 0; A never sees B's income, B never sees A's. The connection is
TLS 1.3 with each side's key pinned (confidentiality and integrity of everything sent; it does
not hide traffic volume or timing); --psk FILE uses a shared secret instead.

Try it on one machine:  pgc demo,  pgc local millionaires.c --a income=5000 --b income=7000
Computations: C programs (.c) and Verilog designs (.v, through Yosys), compiled on the fly and
cached in $XDG_CACHE_HOME/pgc or ~/.cache/pgc; circuits from pgc compile (.pgc), Bristol
Fashion (basic and MAND) and the old Bristol format, or builtin:NAME (builtin:millionaires,
builtin:aes128, builtin:random:WIDTHxDEPTH).";

const RUN_EXAMPLES: &str = "\
What each party learns: the outputs revealed to it (OUTPUT_x both, OUTPUT_A_x only A,
OUTPUT_B_x only B; outputs a party may not see are left out of its output) and nothing else
about the other party's inputs. Both learn the program, the input and output types, and who
owns what. That holds if the peer runs pgc unmodified; against a peer that may not, both
give --security malicious or dual-execution (guarantees and costs above, under --security).

The connection is TLS 1.3 with mutual authentication: confidentiality and integrity of
everything sent, and each party talks only to the holder of the key it pinned (traffic volume
and timing are not hidden). Each party runs `pgc keygen` once and gives the printed
fingerprint to the other; then every run names the other's with --peer-key (or both use
--psk FILE with a secret from `pgc keygen --secret FILE`; --insecure-plaintext opts out).
The examples below leave that flag out after the first.

Examples:
  # A C program; each party gives only its own inputs, by name:
  pgc run millionaires.c --party a --listen 0.0.0.0:7000 --input income=5000 --peer-key pgc1-9f2c...
  pgc run millionaires.c --party b --connect hostA:7000 --input income=7000 --peer-key pgc1-41ab...

  # Against a peer that may run modified software (both sides give the same level):
  pgc run millionaires.c --party a --listen 0.0.0.0:7000 --input income=5000 --security malicious
  pgc run millionaires.c --party b --connect hostA:7000 --input income=7000 --security malicious

  # Arrays, structs, or a JSON file of inputs (compile once, copy the .pgc to both sides):
  pgc compile biomatch.c -D BIOMATCH_N=512   # writes biomatch.pgc
  pgc run biomatch.pgc --party a --listen 0.0.0.0:7000 --inputs db.json   # {\"db\": [[1,2,3,4], ...]}
  pgc run biomatch.pgc --party b --connect hostA:7000 --input 'sample=[3,1,4,1]'

  # A holds the key, B the plaintext of a Bristol Fashion AES-128 circuit:
  pgc run aes_128.txt --party a --listen 0.0.0.0:7000 --input 0x000102030405060708090a0b0c0d0e0f
  pgc run aes_128.txt --party b --connect hostA:7000 --input 0x00112233445566778899aabbccddeeff

  # A owns input values 0 and 2 of a three-input circuit (both sides pass the same flag):
  pgc run ModAdd512.txt --party a --inputs-of-a 0,2 --listen 0.0.0.0:7000 --input 5 --input 97
  pgc run ModAdd512.txt --party b --inputs-of-a 0,2 --connect hostA:7000 --input 9

Either side may start first: --connect retries until --timeout. The listening side ignores
connections that fail authentication (noting each on stderr) and keeps waiting for its peer.
Both sides must load the same circuit (same program and compile options); a different circuit,
version, input assignment or output visibility stops both with an error.";

const LOCAL_EXAMPLES: &str = "\
Both parties run in this process, so every output is shown (OUTPUT_A_x as party A decoded it,
OUTPUT_B_x as party B did). With --security malicious or dual-execution, this measures what
the protection against a cheating peer costs (neither party here deviates).

Examples:
  pgc local examples/millionaires.c --a income=5000 --b income=7000
  pgc local prog.c -D N=8 --a 'v=[1,2,3,4,5,6,7,8]' --b 'p={x: 1, y: -2}' --json
  pgc local prog.pgc --inputs inputs.json
  pgc local builtin:millionaires --a 5000000 --b 7250000
  pgc local examples/millionaires.c --a income=5000 --b income=7000 --security malicious
  pgc local sha256.txt --a 0x61626380...18 --b 0x6a09e667...5be0cd19 --json";

const EVAL_EXAMPLES: &str = "\
Examples:
  pgc eval examples/millionaires.c --input INPUT_A_income=5000 --input INPUT_B_income=7000
  pgc eval adder64.txt --input 1 --input 2 --json";

const COMPILE_EXAMPLES: &str = "\
A program names its private inputs INPUT_A_x / INPUT_B_x (party A's / party B's) and its results
OUTPUT_x (revealed to both), OUTPUT_A_x (to A only) or OUTPUT_B_x (to B only), as parameters or
locals of mpc_main (or --entry), e.g.
  void mpc_main(int INPUT_A_income, int INPUT_B_income, int *OUTPUT_result)
  { *OUTPUT_result = INPUT_A_income > INPUT_B_income; }

Examples:
  pgc compile millionaires.c                  # writes millionaires.pgc
  pgc compile matmul.c -D N=16 -o mm.pgc --stats
  pgc compile prog.c --emit bristol           # writes prog.txt (Bristol Fashion)
  pgc info millionaires.pgc

run, local, eval and info also take the .c file directly, with the same -D/-I/--optimize/--entry
options (compiled programs are cached under $XDG_CACHE_HOME/pgc or ~/.cache/pgc).

Limits (environment): C's preprocessor runs within PGC_CPP_TIMEOUT seconds [120] and 2 GiB;
Yosys (for Verilog) within PGC_YOSYS_TIMEOUT seconds [600] per run, PGC_YOSYS_MEMORY [half
of this machine's memory; MiB, or a size such as 16G] and a netlist of PGC_YOSYS_NETLIST
[1G]. A Verilog design, or a C program unrolled (--compact never), may make as many gates as
--max-memory holds (64 bytes each); --compact auto turns compact there if that comes first.";

const INFO_EXAMPLES: &str = "\
Examples:
  pgc info examples/millionaires.c            # compiles (cached) and describes the circuit
  pgc info examples/biomatch.c                # lists the parallel regions: line, instances, ANDs
  pgc info millionaires.pgc --json            # the same figures as JSON
  pgc info aes_128.txt                        # a Bristol circuit (no names or types)
  pgc info builtin:random:4096x100";

const BENCH_EXAMPLES: &str = "\
Examples:
  pgc bench garble                            # half-gates speed on one thread, in memory
  pgc bench run --ands 4000000                # both parties over loopback, TLS and plaintext
  pgc bench run --ands 100000 --security malicious
  pgc bench apps --small --out results/       # BioMatch, MExp, MVMul tables and SVG plots
Each subcommand's --help lists its options and defaults; BENCHMARKS.md has the figures.";

#[derive(Parser)]
#[command(name = "pgc", version, about = "Secure two-party computation with garbled circuits",
    long_about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Most memory a circuit may need (its wire labels, gate records, the evaluation's wire
    /// words, and the gates compiling a Verilog design makes), checked before anything is
    /// allocated: bytes or a size such as 512M, 8G, 8GiB [default: half of this machine's
    /// memory].
    #[arg(long, global = true, value_name = "SIZE")]
    max_memory: Option<pgc_circuit::MemoryLimit>,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a C program or a Verilog design into a circuit (.pgc, or Bristol Fashion).
    #[command(after_help = COMPILE_EXAMPLES)]
    Compile(compile::CompileCmdArgs),
    /// Show a circuit's size, AND depth, level widths, wire memory and typed inputs/outputs.
    #[command(after_help = INFO_EXAMPLES)]
    Info(commands::InfoArgs),
    /// Evaluate a circuit in the clear on all its inputs (no security; for checking).
    #[command(after_help = EVAL_EXAMPLES)]
    Eval(commands::EvalArgs),
    /// Run one party of the secure protocol against a peer on the network.
    #[command(after_help = RUN_EXAMPLES)]
    Run(commands::RunArgs),
    /// Run both parties on this machine over loopback TLS (for trying things out).
    #[command(after_help = LOCAL_EXAMPLES)]
    Local(commands::LocalArgs),
    /// Make this party's key (or a shared secret) for the encrypted connection.
    #[command(long_about = keygen::KEYGEN_ABOUT, after_help = keygen::KEYGEN_EXAMPLES)]
    Keygen(keygen::KeygenArgs),
    /// Measure speed: garbling, OT, whole runs, the seed paper's experiments, GPU.
    ///
    /// Garbling, OT extension and whole runs on generated circuits (garble, ot, run), the
    /// seed paper's experiments (width, apps, ipp), the GPU engine against the CPU (gpu) and
    /// three-halves against half-gates garbling (garbling).
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(bench::BenchArgs),
    /// Show the whole system working: two parties on this machine, each result checked.
    ///
    /// Two parties on this machine over loopback TLS, each result checked: millionaires
    /// (built in code and compiled from C), AES-128 (Yao and GMW), a throughput run, BioMatch
    /// in three parallel modes, a compact 200×200 edit distance, and the millionaires at
    /// --security malicious with a recorded run in which cheats are caught.
    Demo(DemoArgs),
}

#[derive(Args)]
struct DemoArgs {
    /// Print results as JSON.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    output::remove_temp_files_on_interrupt();
    if let Some(limit) = cli.max_memory {
        limit.set_process_wide();
    }
    let result = match cli.command {
        Command::Compile(a) => compile::compile(a),
        Command::Info(a) => commands::info(a),
        Command::Eval(a) => commands::eval(a),
        Command::Run(a) => commands::run(a),
        Command::Local(a) => commands::local(a),
        Command::Keygen(a) => keygen::keygen(a),
        Command::Bench(a) => bench::bench(a),
        Command::Demo(a) => demo::demo(a.json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The hint names a file, whose name may hold control characters too.
            let hint = pgc_engine::terminal_safe(&hint(&e));
            eprintln!("error: {}{hint}", pgc_engine::error_text(&e));
            ExitCode::FAILURE
        }
    }
}

/// What to add to an error whose cause is not evident from it: a file pgc took for a
/// Bristol circuit (neither a `.pgc` file by its contents nor named *.c, *.v or *.sv) that is
/// not one at all, e.g. C++ source or a C program saved under another name.
fn hint(e: &anyhow::Error) -> String {
    use pgc_circuit::bristol::{CircuitFileError, ParseErrorKind};
    for cause in e.chain() {
        if let Some(CircuitFileError::Parse { path, source }) = cause.downcast_ref() {
            let header = matches!(
                source.kind,
                ParseErrorKind::BadHeader { .. } | ParseErrorKind::MissingHeader { .. }
            );
            if source.line == 1 && header {
                return format!(
                    " ({} is not a pgc circuit file, and pgc compiles only files named *.c \
                     (C) or *.v, *.sv (Verilog), so it was read as a Bristol circuit)",
                    path.display()
                );
            }
        }
    }
    String::new()
}
