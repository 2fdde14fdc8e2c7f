// The expression layer: node semantics against float64 references, guards and NaN handling,
// fused counters and reductions, and the host logarithm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/expr/expr.hpp"
#include "kernels/expr/host_evaluate.hpp"
#include "kernels/projection_map.hpp"
#include "tests/kernels/test_support.hpp"

namespace slicestream::expr {
namespace {

// out[i] = e for every i in [0, n), as one row of n columns.
template <class E>
void assign_all(float* out, const E& e, std::size_t n) {
  assign_rows(out, e, Extent2D{1, static_cast<int>(n)}, 0, 1);
}

using test::RandomSource;

// A complete preprocessing-like expression, used to check node properties.
auto sample_expression(const std::uint16_t* raw, const float* dark, const float* gain,
                       const CosineWeight& cosine) {
  const auto t = (array(raw) - array(dark)) * array(gain);
  return select(!is_finite(t), 0.0f, generator(cosine) * neg_log(max(t, 1e-6f)));
}

TEST(Expression, NodesAreTriviallyCopyableForKernelArguments) {
  using E = decltype(sample_expression(nullptr, nullptr, nullptr, CosineWeight{}));
  static_assert(std::is_trivially_copyable_v<E>, "expressions are passed to kernels by value");
  static_assert(std::is_standard_layout_v<ArrayLeaf<float>>);
  static_assert(kIsExpression<E>);
  static_assert(!kIsExpression<float>);
  // Value semantics: a copy evaluates like the original.
  const std::vector<std::uint16_t> raw = {100, 200};
  const std::vector<float> dark = {10, 10};
  const std::vector<float> gain = {0.01f, 0.002f};
  CosineWeight cosine{};
  cosine.enabled = false;
  const E e = sample_expression(raw.data(), dark.data(), gain.data(), cosine);
  E copy;
  std::memcpy(&copy, &e, sizeof e);
  const Index2D index{1, 0, 1};
  EXPECT_EQ(copy.at(index), e.at(index));
  EXPECT_NEAR(e.at(index), -std::log(190.0 * 0.002), 1e-6);
}

TEST(Expression, ArithmeticMatchesDoubleReference) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const std::size_t n = 1000 + static_cast<std::size_t>(random.uniform_int(0, 100));
  const std::vector<float> a = random.floats(n, -10, 10);
  const std::vector<float> b = random.floats(n, 0.5, 4);
  std::vector<std::uint16_t> c(n);
  std::vector<std::uint32_t> d(n);
  for (std::size_t i = 0; i < n; ++i) {
    c[i] = static_cast<std::uint16_t>(random.uniform_int(0, 65535));
    d[i] = static_cast<std::uint32_t>(random.uniform_int(0, 1 << 24));
  }
  const auto e = (array(a.data()) * 3.0f - array(b.data())) / array(b.data()) +
                 min(array(c.data()), 30000.0f) - max(array(d.data()), 2.0 * array(a.data())) +
                 abs(-array(a.data())) + sqrt(array(b.data())) + square(array(a.data()));
  std::vector<float> out(n);
  assign_all(out.data(), e, n);
  std::vector<double> ref(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double ai = a[i], bi = b[i];
    ref[i] = (ai * 3 - bi) / bi + std::min<double>(c[i], 30000.0) - std::max<double>(d[i], 2 * ai) +
             std::abs(ai) + std::sqrt(bi) + ai * ai;
  }
  EXPECT_LT(test::relative_error(out, ref), 1e-6);
}

TEST(Expression, PredicatesAndSelect) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-1.0f, 0.0f, 2.0f, inf, -inf, nan, FLT_MAX, 5.0f};
  const auto v = array(x.data());
  std::vector<float> out(x.size());
  assign_all(out.data(), select(is_finite(v), v, -7.0f), x.size());
  EXPECT_EQ(out, (std::vector<float>{-1, 0, 2, -7, -7, -7, FLT_MAX, 5}));
  assign_all(out.data(), select((v > 0.0f && v < 3.0f) || v == -1.0f, 1.0f, 0.0f), x.size());
  EXPECT_EQ(out, (std::vector<float>{1, 0, 1, 0, 0, 0, 0, 0}));
  assign_all(out.data(), select(!(v >= 0.0f) && v != -inf, 1.0f, 0.0f), x.size());
  EXPECT_EQ(out, (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0}));
  assign_all(out.data(), select(v <= 0.0f, 1.0f, 0.0f), x.size());
  EXPECT_EQ(out, (std::vector<float>{1, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(Expression, GuardsClampAndNanOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-5.0f, 0.5f, 9.0f, nan};
  const auto v = array(x.data());
  std::vector<float> out(x.size());
  assign_all(out.data(), clamp(v, 0.0f, 1.0f), x.size());
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_TRUE(std::isnan(out[3]));  // NaN stays visible to is_finite guards
  // min/max propagate NaN from the left operand, and ignore it on the right.
  assign_all(out.data(), max(v, 1.0f), x.size());
  EXPECT_TRUE(std::isnan(out[3]));
  assign_all(out.data(), max(scalar(1.0f), v), x.size());
  EXPECT_EQ(out[3], 1.0f);
  assign_all(out.data(), min(v, 1.0f), x.size());
  EXPECT_TRUE(std::isnan(out[3]));
}

TEST(Expression, HostLogIsAccurateOverTheWholeRange) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  // Random magnitudes across all normal and subnormal exponents, plus exact special values.
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) {
    x.push_back(static_cast<float>(std::exp2(random.uniform(-148.5, 127.9))));
  }
  for (float special : {1.0f, 2.0f, 0.5f, FLT_MIN, FLT_MAX, FLT_TRUE_MIN, 0.70710677f, 1.4142135f,
                        1.0f + FLT_EPSILON, 1.0f - FLT_EPSILON / 2}) {
    x.push_back(special);
  }
  std::vector<float> out(x.size());
  assign_all(out.data(), log(array(x.data())), x.size());
  double worst_ulps = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double ref = std::log(static_cast<double>(x[i]));
    const double ulp =
        std::max(std::abs(static_cast<double>(std::nextafter(static_cast<float>(ref), INFINITY)) -
                          static_cast<float>(ref)),
                 1e-45);
    const double ulps = std::abs(static_cast<double>(out[i]) - ref) / ulp;
    worst_ulps = std::max(worst_ulps, ulps);
  }
  RecordProperty("worst_log_ulps", std::to_string(worst_ulps));
  EXPECT_LT(worst_ulps, 2.0);  // measured 0.73
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> specials = {0.0f, -0.0f, -1.0f,
                                       inf,  -inf,  std::numeric_limits<float>::quiet_NaN()};
  std::vector<float> special_out(specials.size());
  assign_all(special_out.data(), log(array(specials.data())), specials.size());
  EXPECT_EQ(special_out[0], -inf);
  EXPECT_EQ(special_out[1], -inf);
  EXPECT_TRUE(std::isnan(special_out[2]));
  EXPECT_EQ(special_out[3], inf);
  EXPECT_TRUE(std::isnan(special_out[4]));
  EXPECT_TRUE(std::isnan(special_out[5]));
}

struct RowColumnProbe {
  int width;
  SLICESTREAM_INLINE float at(int row, int col) const {
    return static_cast<float>(row * 1000 + col);
  }
};

TEST(Expression, GeneratorsSeeRowAndColumnAndRowRangesAreRespected) {
  const Extent2D extent{7, 13};
  std::vector<float> base(extent.size(), -1.0f);
  std::vector<float> out(extent.size(), -1.0f);
  const auto e = generator(RowColumnProbe{extent.cols}) + array(base.data()) + 1.0f;
  assign_rows(out.data(), e, extent, 2, 5);
  for (int r = 0; r < extent.rows; ++r) {
    for (int c = 0; c < extent.cols; ++c) {
      const float expected = r >= 2 && r < 5 ? static_cast<float>(r * 1000 + c) : -1.0f;
      EXPECT_EQ(out[static_cast<std::size_t>(r * extent.cols + c)], expected);
    }
  }
  // The device-side helper recovers (row, col) from a flat index.
  const Index2D index = extent.index(5 * 13 + 11);
  EXPECT_EQ(index.row, 5);
  EXPECT_EQ(index.col, 11);
  EXPECT_EQ(e.at(index), 5011.0f);
}

TEST(Expression, CountersAreFusedIntoTheEvaluation) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const Extent2D extent{31, 57};
  std::vector<float> x = random.floats(extent.size(), -2, 2);
  x[250] = std::numeric_limits<float>::infinity();
  x[400] = std::numeric_limits<float>::quiet_NaN();
  const auto v = array(x.data());
  const auto negative = v < 0.0f;
  const auto bad = !is_finite(v);
  std::vector<float> out(extent.size());
  Counts<2> counts{5, 0};  // counters are added to
  assign_rows(out.data(), select(bad, 0.0f, v * 2.0f), extent, 3, 29, &counts, negative, bad);
  std::uint64_t expected_negative = 0, expected_bad = 0;
  for (std::size_t i = 3 * 57; i < 29 * 57; ++i) {
    expected_negative += x[i] < 0.0f;
    expected_bad += !std::isfinite(x[i]);
    EXPECT_EQ(out[i], std::isfinite(x[i]) ? 2.0f * x[i] : 0.0f);
  }
  EXPECT_EQ(counts[0], 5 + expected_negative);
  EXPECT_EQ(counts[1], expected_bad);
  EXPECT_EQ(expected_bad, 2u);

  Counts<1> flat_counts{};
  assign_rows(out.data(), v + 1.0f, Extent2D{1, static_cast<int>(x.size())}, 0, 1, &flat_counts,
              negative);
  std::uint64_t all_negative = 0;
  for (float value : x)
    all_negative += value < 0.0f;
  EXPECT_EQ(flat_counts[0], all_negative);
}

TEST(Expression, FusedReductionsMatchDoubleReference) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const std::size_t n = 100003;  // not a multiple of the lane count
  const std::vector<float> a = random.floats(n, -1, 1);
  const std::vector<float> b = random.floats(n, -1, 1);
  double ref_sum = 0, ref_dot = 0, ref_norm = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ref_sum += 2.0 * a[i] + 0.5;
    ref_dot += static_cast<double>(a[i]) * b[i];
    ref_norm += static_cast<double>(a[i]) * a[i];
  }
  const auto va = array(a.data());
  const auto vb = array(b.data());
  EXPECT_NEAR(sum(2.0f * va + 0.5f, 0, n), ref_sum, 1e-9 * n);
  EXPECT_NEAR(dot(va, vb, 0, n), ref_dot, 1e-10 * n);
  EXPECT_NEAR(squared_norm(va, 0, n), ref_norm, 1e-10 * n);
  // Sub-ranges, including ones shorter than a lane block.
  EXPECT_NEAR(sum(va, 10, 13), static_cast<double>(a[10]) + a[11] + a[12], 1e-12);
  EXPECT_EQ(sum(va, 5, 5), 0.0);

  // In place: r = r - alpha * q, returning |r_new|^2, in one pass.
  std::vector<float> r = a;
  const float alpha = 0.25f;
  double rr = 0;
  evaluate_pass(
      fused(store(r.data(), array(r.data()) - alpha * vb), reduce_squared_norm(array(r.data()))),
      Extent2D{static_cast<int>(n), 1}, &rr);
  double ref_rr = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float expected = a[i] - alpha * b[i];
    ASSERT_FLOAT_EQ(r[i], expected);
    ref_rr += static_cast<double>(expected) * expected;
  }
  EXPECT_NEAR(rr, ref_rr, 1e-6 * ref_rr);
}

// A fused pass over rows x columns: stores in order, then per-column sums, dots and maxima that
// read the values just stored (in place), against a plain double reference.
TEST(Expression, FusedPassStoresThenReducesPerColumn) {
  RandomSource random;
  SCOPED_TRACE(random.trace());
  const Extent2D extent{1001, 3};
  const std::vector<float> r0 = random.floats(extent.size(), -1, 1);
  const std::vector<float> q = random.floats(extent.size(), -1, 1);
  const float alpha[3] = {0.5f, -2.0f, 0.0f};
  std::vector<float> r = r0, p(extent.size());
  double results[4 * 3];
  evaluate_pass(
      fused(store(r.data(), array(r.data()) - per_column(alpha) * array(q.data())),
            store(p.data(), 2.0f * array(r.data())), reduce_sum(array(p.data())),
            reduce_squared_norm(array(r.data())), reduce_dot(array(r.data()), array(q.data())),
            reduce_max_abs(array(r.data()) - 1.0f)),
      extent, results);
  EXPECT_EQ(decltype(fused(reduce_sum(array(r.data())), store(p.data(), 1.0f)))::kReductions, 1);
  double sums[3] = {}, norms[3] = {}, dots[3] = {}, maxima[3] = {};
  for (std::size_t i = 0; i < extent.size(); ++i) {
    const int c = static_cast<int>(i % 3);
    const float expected = r0[i] - alpha[c] * q[i];
    ASSERT_FLOAT_EQ(r[i], expected);
    ASSERT_FLOAT_EQ(p[i], 2.0f * expected);
    sums[c] += 2.0 * expected;
    norms[c] += static_cast<double>(expected) * expected;
    dots[c] += static_cast<double>(expected) * q[i];
    maxima[c] = std::max(maxima[c], std::abs(static_cast<double>(expected - 1.0f)));
  }
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(results[c], sums[c], 1e-9);
    EXPECT_NEAR(results[3 + c], norms[c], 1e-9);
    EXPECT_NEAR(results[6 + c], dots[c], 1e-9);
    EXPECT_DOUBLE_EQ(results[9 + c], maxima[c]);
  }
}

}  // namespace
}  // namespace slicestream::expr
