// VLA's affine stage (SPEC §1, claim VLA-C9) in exact rational arithmetic: the recurrence
// S_t = S_{t−1} + (v_t − S_{t−1} k̂_t) α̂_t^T fed with exact rational unit vectors k̂_t, α̂_t
// (RationalSource::unit_vector; the norms of the full mechanism are not rational), against the Blelloch
// scan over the maps S ↦ S F_t + G_t. The derived right-acting composition and the printed composition
// on the transposed maps reproduce serial to the last bit; the printed composition on the paper's maps
// does not (and is undefined for d_v ≠ d_k); a planted wrong operator is caught.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "larc/proofs_check/exact.h"
#include "larc/reference/vla.h"

using namespace larc::ref;
namespace vla = larc::ref::vla;
using Q = rational;

namespace {

struct Writes {
  Mat<Q> khat, ahat, v, s0;  // s0 stored as S^T (d_k × d_v)
};

Writes exact_writes(Eigen::Index T, Eigen::Index dk, Eigen::Index dv, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  Writes w{Mat<Q>(T, dk), Mat<Q>(T, dk), src.matrix(T, dv), src.matrix(dk, dv)};
  for (Eigen::Index t = 0; t < T; ++t) {
    w.khat.row(t) = src.unit_vector(dk).transpose();
    w.ahat.row(t) = src.unit_vector(dk).transpose();
  }
  return w;
}

struct States {
  std::vector<Mat<Q>> all;
  Mat<Q> last;
};

States serial_states(const Writes& w) {
  States s;
  s.last = vla::affine_serial<Q>(w.s0, w.khat, w.ahat, w.v, [&](Eigen::Index, const Mat<Q>& x) { s.all.push_back(x); });
  return s;
}

States scan_states(const Writes& w, vla::ScanOperator op) {
  States s;
  s.last = vla::affine_scan<Q>(w.s0, w.khat, w.ahat, w.v, op, [&](Eigen::Index, const Mat<Q>& x) { s.all.push_back(x); });
  return s;
}

bool all_equal(const States& a, const States& b) {
  if (a.all.size() != b.all.size() || !(a.last == b.last)) return false;
  for (std::size_t i = 0; i < a.all.size(); ++i)
    if (!(a.all[i] == b.all[i])) return false;
  return true;
}

}  // namespace

TEST(VlaScanExact, CorrectOperatorsReproduceSerialAtEveryT) {
  for (Eigen::Index T : {1, 2, 63, 64, 65})
    for (auto [dk, dv] : {std::pair<Eigen::Index, Eigen::Index>{3, 2}, {2, 3}, {2, 2}}) {
      const Writes w = exact_writes(T, dk, dv, 1000 * T + 10 * dk + dv);
      const States ser = serial_states(w);
      ASSERT_EQ(ser.all.size(), static_cast<std::size_t>(T));
      for (auto op : {vla::ScanOperator::right_acting, vla::ScanOperator::as_printed_transposed})
        EXPECT_TRUE(all_equal(scan_states(w, op), ser)) << vla::operator_name(op) << " T=" << T << " dk=" << dk << " dv=" << dv;
    }
}

TEST(VlaScanExact, PrintedOperatorOnThePapersMapsDisagreesWithSerial) {
  // d_v = d_k so that the printed formula is defined; from T = 2 on, (F_r F_l) is not S ↦ S F_l F_r.
  const Writes w = exact_writes(2, 2, 2, 7);
  const States ser = serial_states(w);
  const States printed = scan_states(w, vla::ScanOperator::as_printed);
  EXPECT_TRUE(printed.all[0] == ser.all[0]);  // one token: nothing is composed yet
  EXPECT_FALSE(printed.all[1] == ser.all[1]);
  EXPECT_FALSE(all_equal(scan_states(exact_writes(64, 3, 3, 8), vla::ScanOperator::as_printed),
                         serial_states(exact_writes(64, 3, 3, 8))));
}

TEST(VlaScanExact, PrintedOperatorOnThePapersMapsIsUndefinedForDvNotDk) {
  const Writes w = exact_writes(3, 3, 2, 9);
  EXPECT_THAT([&] { scan_states(w, vla::ScanOperator::as_printed); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("d_v = d_k")));
}

TEST(VlaScanExact, APlantedWrongOperatorIsCaught) {
  // Composition in the wrong order for right-acting maps (r before l) through the same generic scan.
  const Writes w = exact_writes(5, 3, 2, 11);
  std::vector<vla::AffineMap<Q>> maps;
  for (Eigen::Index t = 0; t < 5; ++t)
    maps.push_back(vla::token_map<Q>(w.khat.row(t).transpose(), w.ahat.row(t).transpose(), w.v.row(t).transpose()));
  const vla::AffineMap<Q> id{Mat<Q>::Identity(3, 3), Mat<Q>::Zero(2, 3)};
  const auto swapped = [](const vla::AffineMap<Q>& l, const vla::AffineMap<Q>& r) { return vla::compose_right_acting(r, l); };
  const auto wrong = larc::ref::scan::blelloch_inclusive(maps, swapped, id);
  const auto right = larc::ref::scan::blelloch_inclusive(maps, vla::compose_right_acting<Q>, id);
  const Mat<Q> s0 = w.s0.transpose();
  const States ser = serial_states(w);
  EXPECT_TRUE(Mat<Q>((s0 * right[4].f + right[4].g).transpose()) == ser.last);
  EXPECT_FALSE(Mat<Q>((s0 * wrong[4].f + wrong[4].g).transpose()) == ser.last);
}
