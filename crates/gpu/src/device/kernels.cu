/* The CUDA kernels (compiled at run time by NVRTC after halfgates.h, which the Rust side
 * prepends). One launch per level of the window's schedule: thread i garbles or evaluates
 * gate record i of the level, in a grid-stride loop; the AES tables (4 KiB) and round keys
 * are staged in shared memory per block. `aes` holds te[1024] then rk[44]. */

__device__ __forceinline__ void pgc_stage_aes(const unsigned *aes, unsigned *s_te,
                                              unsigned *s_rk) {
    for (unsigned k = threadIdx.x; k < 1024u; k += blockDim.x) s_te[k] = aes[k];
    for (unsigned k = threadIdx.x; k < 44u; k += blockDim.x) s_rk[k] = aes[1024u + k];
    __syncthreads();
}

extern "C" __global__ void pgc_garble_level(const uint4 *gates, unsigned n, uint4 *labels,
                                            uint4 *tables, const unsigned *aes, uint4 delta,
                                            unsigned long long and_base) {
    __shared__ unsigned s_te[1024];
    __shared__ unsigned s_rk[44];
    pgc_stage_aes(aes, s_te, s_rk);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint4 g = gates[i];
        pgc_garble_gate(s_te, s_rk, g.x, g.y, g.z, g.w, labels, tables, delta, and_base);
    }
}

extern "C" __global__ void pgc_evaluate_level(const uint4 *gates, unsigned n, uint4 *labels,
                                              const uint4 *tables, const unsigned *aes,
                                              unsigned long long and_base) {
    __shared__ unsigned s_te[1024];
    __shared__ unsigned s_rk[44];
    pgc_stage_aes(aes, s_te, s_rk);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        uint4 g = gates[i];
        pgc_evaluate_gate(s_te, s_rk, g.x, g.y, g.z, g.w, labels, tables, and_base);
    }
}

/* The seed's scheme (see halfgates.h): first every wire's zero-label from a PRF of its
 * index (AES under a separate random key), then every gate in one launch. */
extern "C" __global__ void pgc_draw_labels(uint4 *labels, unsigned long long count,
                                           const unsigned *aes) {
    __shared__ unsigned s_te[1024];
    __shared__ unsigned s_rk[44];
    pgc_stage_aes(aes, s_te, s_rk);
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 x = make_uint4((unsigned)i, (unsigned)(i >> 32), 0u, 0u);
        labels[i] = pgc_aes(s_te, s_rk, x);
    }
}

extern "C" __global__ void pgc_garble_independent(const uint4 *gates, unsigned long long n,
                                                  const uint4 *labels, uint4 *tables,
                                                  uint4 *corrections, const unsigned *aes,
                                                  uint4 delta, unsigned long long and_base) {
    __shared__ unsigned s_te[1024];
    __shared__ unsigned s_rk[44];
    pgc_stage_aes(aes, s_te, s_rk);
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 g = gates[i];
        pgc_garble_gate_independent(s_te, s_rk, g.x, g.y, g.z, g.w, labels, tables, corrections,
                                    i, delta, and_base);
    }
}
