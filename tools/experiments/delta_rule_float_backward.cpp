// Reads one (sequence, value head) of a GDN problem as text (T K V; q, k, v rows; α; β; S_0 rows; dht rows),
// runs the reference's float backward with dht alone in its two forms, the chunked (UT/WY, chunk 64, as the
// gate's ref-chunked-f32) and the serial adjoint (checkpoint 64, as ref-serial-f32), and prints a line a token:
// dβ of the chunked form and of the serial form, then dk's K entries of each. Built by
// tools/experiments/gradient_baseline_spread.py.
#include <cstdio>
#include <iostream>

#include "larc/reference/delta_rule_chunked_backward.h"

int main() {
  using namespace larc::ref;
  long T = 0, K = 0, V = 0;
  std::cin >> T >> K >> V;
  const auto read = [](long rows, long cols) {
    Mat<double> m(rows, cols);
    for (long i = 0; i < rows; ++i)
      for (long j = 0; j < cols; ++j) std::cin >> m(i, j);
    return m;
  };
  const Mat<double> q = read(T, K), k = read(T, K), v = read(T, V), alpha = read(T, 1), beta = read(T, 1);
  const Mat<double> s0 = read(K, V), dht = read(K, V);
  if (!std::cin) {
    std::fprintf(stderr, "delta_rule_float_backward: the problem text is short or malformed\n");
    return 2;
  }
  const delta_rule::Problem<float> p{q.cast<float>(), k.cast<float>(), v.cast<float>(), alpha.col(0).cast<float>(),
                                     beta.col(0).cast<float>(), 1.f, Mat<float>(s0.cast<float>())};
  delta_rule::Cotangents<float> c{Mat<float>::Zero(T, V), Mat<float>(dht.cast<float>())};
  const auto chunked = delta_rule::chunked_backward<float>(p, c, 64);
  const auto serial = delta_rule::backward<float>(p, c, 64);
  for (long t = 0; t < T; ++t) {
    std::printf("%.9e %.9e", static_cast<double>(chunked.grads.dbeta(t)), static_cast<double>(serial.dbeta(t)));
    for (const auto* dk : {&chunked.grads.dk, &serial.dk})
      for (long i = 0; i < K; ++i) std::printf(" %.9e", static_cast<double>((*dk)(t, i)));
    std::printf("\n");
  }
}
