// Benchmark driver for scripts/bench_emp_ag2pc.sh, built inside an emp-ag2pc checkout (not part
// of pgc's build): copy it to emp-ag2pc/test/bench_circuit.cpp and add
//   add_test_executable_with_lib(bench_circuit "")
// to emp-ag2pc/test/CMakeLists.txt. It runs one party of emp-ag2pc's authenticated garbling
// (C2PC) on the old-Bristol circuit file given as argv[3], in the phases of emp-ag2pc's
// test/single_execution.h (constructor = setup with the base OTs, function_independent,
// function_dependent, online with the output revealed to both; all inputs zero), and prints
// per-phase times, the bytes this party sent on all three of its TCP channels, and the output.
// Usage: ./build/bin/test_bench_circuit <1|2> <port> <circuit.txt>   (party 2 connects to
// emp-ag2pc's config.h IP, 127.0.0.1)
#include <emp-tool/emp-tool.h>
#include "emp-ag2pc/emp-ag2pc.h"
using namespace std;
using namespace emp;

static uint64_t bytes_sent(NetIO *io, C2PC<NetIO> &twopc) {
	uint64_t sum = io->counter;
	for (int i = 0; i < Fpre<NetIO>::THDS; ++i)
		sum += twopc.fpre->io[i]->counter + twopc.fpre->io2[i]->counter;
	return sum;
}

int main(int argc, char **argv) {
	if (argc < 4) {
		cerr << "usage: " << argv[0] << " <1|2> <port> <circuit.txt>\n";
		return 2;
	}
	int party, port;
	parse_party_and_port(argv, &party, &port);
	auto t0 = clock_start();
	BristolFormat cf(argv[3]);
	double load = time_from(t0);
	NetIO *io = new NetIO(party == ALICE ? nullptr : IP, port, true);

	auto t1 = clock_start();
	C2PC<NetIO> twopc(io, party, &cf);
	io->flush();
	double setup = time_from(t1);

	t1 = clock_start();
	twopc.function_independent();
	io->flush();
	double indep = time_from(t1);

	t1 = clock_start();
	twopc.function_dependent();
	io->flush();
	double dep = time_from(t1);

	bool *in = new bool[cf.n1 + cf.n2];
	bool *out = new bool[cf.n3];
	memset(in, false, cf.n1 + cf.n2);
	memset(out, false, cf.n3);
	t1 = clock_start();
	twopc.online(in, out, true);
	double online = time_from(t1);

	// The output as one hex number, output wire i = bit i (the lsb0 order pgc uses).
	string hex;
	for (int i = (cf.n3 + 3) / 4 * 4 - 4; i >= 0; i -= 4) {
		int nib = 0;
		for (int j = 3; j >= 0; --j)
			nib = 2 * nib + (i + j < cf.n3 && out[i + j]);
		hex += "0123456789abcdef"[nib];
	}

	// One line, key=value, times in microseconds (load = parsing the circuit file, not
	// counted in total_us).
	cout << "EMP_BENCH party=" << party << " load_us=" << (uint64_t)load
	     << " setup_us=" << (uint64_t)setup << " indep_us=" << (uint64_t)indep
	     << " dep_us=" << (uint64_t)dep << " online_us=" << (uint64_t)online
	     << " total_us=" << (uint64_t)(setup + indep + dep + online)
	     << " bytes_sent=" << bytes_sent(io, twopc) << " ands=" << twopc.num_ands << " out=0x" << hex << endl;
	delete[] in;
	delete[] out;
	delete io;
	return 0;
}
