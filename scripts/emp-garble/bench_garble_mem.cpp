// In-memory half-gates garbling and evaluation of a Bristol Fashion circuit with EMP-toolkit
// 0.3.0 (emp-tool's HalfGateGen / HalfGateEva, its MITCCRH hash), one thread, no network: the
// peer figure next to `pgc bench garble --circuit FILE`. Like pgc's bench, each repetition
// garbles the circuit into a memory buffer (MemIO) and then evaluates it from that buffer,
// timing the two sides apart; inputs are random labels of all-zero inputs, and the last
// evaluation is checked against the garbler's labels.
//
// Build (scripts/bench_emp_garble.sh does this):
//   g++ -O3 -march=native -maes -mrdseed -funroll-loops -std=c++11 -pthread \
//       -I$PEERS/install/include bench_garble_mem.cpp -L$PEERS/install/lib -lemp-tool \
//       -lssl -lcrypto -Wl,-rpath,$PEERS/install/lib -o bench_garble_mem
// Usage: bench_garble_mem FILE ANDS   (repeats the circuit until ANDS AND gates are done)
// Prints: EMP_GARBLE ands=N garble_s=.. eval_s=.. garble_mands=.. eval_mands=.. garble_cpu_mands=..
// eval_cpu_mands=.. (M AND/s per second of wall time, then per second of the thread's CPU time).
#include "emp-tool/emp-tool.h"
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <vector>
using namespace emp;

// This thread's CPU time in microseconds (leaves out time other processes held the core).
static double cpu_us() {
	timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: %s BRISTOL_FASHION_FILE ANDS\n", argv[0]);
		return 2;
	}
	BristolFashion cf(argv[1]);
	long long ands_per_run = 0;
	for (int i = 0; i < cf.num_gate; ++i)
		ands_per_run += cf.gates[4 * i + 3] == AND_GATE;
	if (ands_per_run == 0) {
		fprintf(stderr, "no AND gates in %s\n", argv[1]);
		return 2;
	}
	long long want = atoll(argv[2]);
	long long reps = (want + ands_per_run - 1) / ands_per_run;

	std::vector<block> in(cf.num_input), gen_out(cf.num_output), eva_out(cf.num_output);
	PRG prg;
	prg.random_block(in.data(), in.size());
	MemIO *mio = new MemIO(64 * (ands_per_run + 16));
	HalfGateGen<MemIO> *gen = new HalfGateGen<MemIO>(mio);
	HalfGateEva<MemIO> *eva = new HalfGateEva<MemIO>(mio);
	block delta = gen->delta;
	double garble_us = 0, eval_us = 0, garble_cpu = 0, eval_cpu = 0;
	for (long long r = 0; r < reps; ++r) {
		mio->clear();
		mio->read_pos = 0;
		CircuitExecution::circ_exec = gen;
		auto t = clock_start();
		double c = cpu_us();
		cf.compute(gen_out.data(), in.data());
		garble_us += time_from(t);
		double c2 = cpu_us();
		garble_cpu += c2 - c;
		CircuitExecution::circ_exec = eva;
		t = clock_start();
		cf.compute(eva_out.data(), in.data());
		eval_us += time_from(t);
		eval_cpu += cpu_us() - c2;
	}
	for (int i = 0; i < cf.num_output; ++i) {
		// All inputs are 0; an output reached through NOT gates carries the other label.
		block e = eva_out[i], g = gen_out[i];
		if (!cmpBlock(&e, &g, 1)) {
			block gd = g ^ delta;
			if (!cmpBlock(&e, &gd, 1)) {
				fprintf(stderr, "output %d: evaluator's label is neither of the garbler's\n", i);
				return 1;
			}
		}
	}
	long long n = reps * ands_per_run;
	printf("EMP_GARBLE ands=%lld garble_s=%.4f eval_s=%.4f garble_mands=%.1f eval_mands=%.1f "
	       "garble_cpu_mands=%.1f eval_cpu_mands=%.1f\n",
	       n, garble_us / 1e6, eval_us / 1e6, n / garble_us, n / eval_us, n / garble_cpu, n / eval_cpu);
	return 0;
}
