/* The CUDA kernels (compiled at run time by NVRTC after halfgates.h, which the Rust side
 * prepends). A window's schedule runs level after level: a wide level is one launch over
 * the whole GPU (pgc_garble_level), and a run of narrow levels is one launch of one block
 * that steps through them with a block barrier between levels (pgc_garble_levels_narrow),
 * since a launch per level of a few gates would cost more than the gates. In both a group
 * of threads takes each gate record, in a grid-stride loop. The AES table te[0] (32
 * interleaved copies, 32 KiB, see PGC_TE0 in halfgates.h) and round keys are staged in
 * shared memory per block. `aes` holds te[1024] (4 tables, of which the kernels read the
 * first) then rk[44]. */

#define PGC_SHARED_TE (256u * PGC_TE_STRIDE)

/* Stages the tables; returns the pointer this thread's lookups go through (its lane's copy). */
__device__ __forceinline__ const unsigned *pgc_stage_aes(const unsigned *aes, uint4 *s_te,
                                                         unsigned *s_rk) {
    /* Word k of the staged table is entry k / 32 of copy k % 32. Each thread stores four
     * consecutive words (copies of one entry) at once, consecutive threads consecutive
     * 16-byte slots (no conflicts), and the loads of a warp hit one word or two. */
    for (unsigned k = threadIdx.x; k < PGC_SHARED_TE / 4u; k += blockDim.x) {
        unsigned w = aes[4u * k / PGC_TE_STRIDE];
        s_te[k] = make_uint4(w, w, w, w);
    }
    for (unsigned k = threadIdx.x; k < 44u; k += blockDim.x) s_rk[k] = aes[1024u + k];
    __syncthreads();
    return (const unsigned *)s_te + (threadIdx.x % PGC_TE_STRIDE);
}

#define PGC_STAGED_AES                                                                   \
    __shared__ uint4 s_te[PGC_SHARED_TE / 4u];                                           \
    __shared__ unsigned s_rk[44];                                                        \
    const unsigned *te = pgc_stage_aes(aes, s_te, s_rk)

/* `v` of the lane `delta` places further on, within aligned groups of `width` lanes. */
__device__ __forceinline__ uint4 pgc_shfl_down(uint4 v, unsigned delta, int width) {
    v.x = __shfl_down_sync(0xffffffffu, v.x, delta, width);
    v.y = __shfl_down_sync(0xffffffffu, v.y, delta, width);
    v.z = __shfl_down_sync(0xffffffffu, v.z, delta, width);
    v.w = __shfl_down_sync(0xffffffffu, v.w, delta, width);
    return v;
}

/* Garbles (GARBLER) or evaluates the n records of one level with `groups` groups of
 * `parts` consecutive lanes, this thread in group `group`: for an AND each lane computes
 * one of its hashes (four garbling, two evaluating), and the group's first lane gathers
 * them and writes the label (and the garbler the rows); other gates take the first lane
 * alone. Several threads per AND give a level that many times the threads, which narrow
 * levels need to fill the GPU (measured: BENCHMARKS.md, "GPU"). Every lane runs the same
 * number of rounds, so the shuffles always have the whole warp. The evaluator only reads
 * `tables`. */
template <bool GARBLER>
__device__ __forceinline__ void pgc_run_records(const unsigned *te, const unsigned *rk,
                                                const uint4 *gates, unsigned n, unsigned groups,
                                                unsigned group, uint4 *labels, uint4 *tables,
                                                uint4 delta, unsigned long long and_base) {
    constexpr unsigned parts = GARBLER ? PGC_GARBLE_PARTS : PGC_EVALUATE_PARTS;
    const unsigned part = threadIdx.x % parts;
    const unsigned rounds = (n + groups - 1) / groups;
    for (unsigned r = 0; r < rounds; r++) {
        unsigned long long i = (unsigned long long)r * groups + group;
        const bool active = i < n;
        uint4 g = active ? gates[i] : make_uint4(0u, 0u, 0u, PGC_OP_XOR);
        const bool is_and = active && (g.w & 7u) == PGC_OP_AND;
        const unsigned long long j = and_base + (g.w >> 3);
        uint4 a = pgc_zero(), b = pgc_zero(), h = pgc_zero();
        if (is_and) {
            a = labels[g.x];
            b = labels[g.y];
            h = GARBLER ? pgc_garble_and_hash(te, rk, a, b, delta, j, part)
                        : pgc_evaluate_and_hash(te, rk, a, b, j, part);
        }
        const uint4 h1 = pgc_shfl_down(h, 1u, parts);
        uint4 h2 = h, h3 = h;
        if constexpr (GARBLER) {
            h2 = pgc_shfl_down(h, 2u, parts);
            h3 = pgc_shfl_down(h, 3u, parts);
        }
        if (active && part == 0u) {
            if (is_and)
                labels[g.z] = GARBLER ? pgc_garble_and_finish(h, h1, h2, h3, a, b, delta,
                                                              tables + 2ull * (g.w >> 3))
                                      : pgc_evaluate_and_finish(h, h1, a, b,
                                                                tables + 2ull * (g.w >> 3));
            else if (GARBLER)
                pgc_garble_gate(te, rk, g.x, g.y, g.z, g.w, labels, tables, delta, and_base);
            else
                pgc_evaluate_gate(te, rk, g.x, g.y, g.z, g.w, labels, tables, and_base);
        }
    }
}

/* The kernels take the same arguments, garbler and evaluator, so that one launch path serves
 * both; the evaluator holds no Δ and ignores `delta`, and only reads `tables`. */

/* One wide level: the records `gates[0..n)` over the whole grid. */
#define PGC_LEVEL_KERNEL(NAME, GARBLER, PARTS)                                                  \
    extern "C" __global__ void NAME(const uint4 *gates, unsigned n, uint4 *labels,             \
                                    uint4 *tables, const unsigned *aes, uint4 delta,           \
                                    unsigned long long and_base) {                             \
        PGC_STAGED_AES;                                                                        \
        pgc_run_records<GARBLER>(te, s_rk, gates, n, gridDim.x * blockDim.x / (PARTS),         \
                                 (blockIdx.x * blockDim.x + threadIdx.x) / (PARTS), labels,    \
                                 tables, delta, and_base);                                     \
    }
PGC_LEVEL_KERNEL(pgc_garble_level, true, PGC_GARBLE_PARTS)
PGC_LEVEL_KERNEL(pgc_evaluate_level, false, PGC_EVALUATE_PARTS)

/* A wide level without ANDs (its first record is not an AND: ANDs come first, see
 * schedule.rs): one thread per gate and no AES tables to stage. `garbler` 0 runs the
 * evaluator's gates. */
extern "C" __global__ void pgc_cheap_level(const uint4 *gates, unsigned n, uint4 *labels,
                                           uint4 delta, unsigned garbler) {
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 g = gates[i];
        if (garbler)
            pgc_garble_gate(0, 0, g.x, g.y, g.z, g.w, labels, 0, delta, 0ull);
        else
            pgc_evaluate_gate(0, 0, g.x, g.y, g.z, g.w, labels, 0, 0ull);
    }
}

/* Levels first..last of the window (offsets[l] is level l's first record), on one block:
 * a level's writes reach the whole block at the barrier, before the next level reads. */
#define PGC_NARROW_KERNEL(NAME, GARBLER, PARTS)                                                 \
    extern "C" __global__ void NAME(const uint4 *gates, const unsigned *offsets,               \
                                    unsigned first, unsigned last, uint4 *labels,              \
                                    uint4 *tables, const unsigned *aes, uint4 delta,           \
                                    unsigned long long and_base) {                             \
        PGC_STAGED_AES;                                                                        \
        for (unsigned l = first; l < last; l++) {                                              \
            pgc_run_records<GARBLER>(te, s_rk, gates + offsets[l], offsets[l + 1] - offsets[l], \
                                     blockDim.x / (PARTS), threadIdx.x / (PARTS), labels,      \
                                     tables, delta, and_base);                                 \
            __syncthreads();                                                                   \
        }                                                                                      \
    }
PGC_NARROW_KERNEL(pgc_garble_levels_narrow, true, PGC_GARBLE_PARTS)
PGC_NARROW_KERNEL(pgc_evaluate_levels_narrow, false, PGC_EVALUATE_PARTS)

/* The seed's scheme (see halfgates.h): first every wire's zero-label from a PRF of its
 * index (AES under a separate random key), then every gate in one launch. */
extern "C" __global__ void pgc_draw_labels(uint4 *labels, unsigned long long count,
                                           const unsigned *aes) {
    PGC_STAGED_AES;
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 x = make_uint4((unsigned)i, (unsigned)(i >> 32), 0u, 0u);
        labels[i] = pgc_aes(te, s_rk, x);
    }
}

extern "C" __global__ void pgc_garble_independent(const uint4 *gates, unsigned long long n,
                                                  const uint4 *labels, uint4 *tables,
                                                  uint4 *corrections, const unsigned *aes,
                                                  uint4 delta, unsigned long long and_base) {
    PGC_STAGED_AES;
    for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 g = gates[i];
        pgc_garble_gate_independent(te, s_rk, g.x, g.y, g.z, g.w, labels, tables, corrections,
                                    i, delta, and_base);
    }
}
