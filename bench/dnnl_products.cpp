// vitattn_dnnl_products: the matrix products of one ViT forward at 224 px, alone, through
// oneDNN: the machine's own GEMM limit, the yardstick for vitattn's forward (a benchmark
// helper for bench/run_dnnl_bench.py, not a test; vitattn itself never links oneDNN).
//
//   vitattn_dnnl_products --d-model D --heads H --mlp M [--layers 12] [--classes 1000]
//                         --threads T --repeat N [--warmup W] [--dtype f32|bf16]
//
// The products are those of src/core/vit.cpp's forward, in its layouts (row-major, weights
// stored (out, in) as nn.Linear holds them, so every weight is read transposed), with n = 197
// tokens (196 patches + the class token), d = D/H:
//   patch embedding  patches (196, 768) · w_patchᵀ (768, D)
//   per layer        qkv   xn (n, D) · w_qkvᵀ (D, 3D)
//                    per head, q, k, v strided inside qkv (leading dimension 3D):
//                      q·kᵀ (n, d)·(d, n) → scores (n, n);  A·v (n, n)·(n, d) → heads (n, D) block
//                    proj  heads (n, D) · w_projᵀ (D, D)
//                    fc1   xn (n, D) · w_fc1ᵀ (D, M)
//                    fc2   hidden (n, M) · w_fc2ᵀ (M, D)
//   head             cls (1, D) · w_headᵀ (D, classes)   (none with --classes 0)
// Each layer has weights of its own (as a model does), so the caches see a forward's traffic.
// Every output is allocated before the timed runs, so a run is products only: no norms,
// softmax, GELU, bias or allocation.
//
// f32 goes through dnnl_sgemm. bf16 goes through dnnl_gemm_bf16bf16f32 (bf16 operands, f32
// accumulation and output: AVX512-BF16's dot products where the CPU has them); its operands,
// weights and activations alike, are converted to bf16 before the timed runs, so the figure is
// the products' own, without the conversions a bf16 forward would also pay.
//
// Threads: Debian's oneDNN uses GNU OpenMP (DNNL_CPU_RUNTIME is OMP in dnnl_config.h), so T is
// set with omp_set_num_threads before the first product; OMP_WAIT_POLICY is left as the
// environment has it (printed).
//
// Before timing, a few entries of every kind of product are checked against a dot product in
// double (a wrong leading dimension or transpose flag fails here, not in a figure).
// Prints one JSON object: per-run wall seconds, their median, the median process CPU seconds of a
// run (every thread's), the median per kind of product, and the products' GFLOP.
#include <omp.h>

#include <dnnl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"

// Exported by libdnnl but absent from oneDNN 2.6's public header. Its declaration in oneDNN's
// source (src/cpu/gemm/gemm.hpp) takes dnnl::impl::bfloat16_t, a struct holding one uint16_t:
// the same bits as uint16_t here. Row-major, like dnnl_sgemm.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char transa, char transb, dnnl_dim_t M, dnnl_dim_t N, dnnl_dim_t K,
                                              float alpha, const std::uint16_t* A, dnnl_dim_t lda,
                                              const std::uint16_t* B, dnnl_dim_t ldb, float beta, float* C,
                                              dnnl_dim_t ldc);

namespace {

using vitattn::bench::median;

struct Args {
  int d_model = 0, heads = 0, mlp = 0, layers = 12, classes = 1000;
  int threads = 1, repeat = 10, warmup = 2;
  bool bf16 = false;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "vitattn_dnnl_products: " << why << "\n"
            << "usage: vitattn_dnnl_products --d-model D --heads H --mlp M [--layers 12] [--classes 1000] "
               "--threads T --repeat N [--warmup W] [--dtype f32|bf16]\n";
  std::exit(2);
}


Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--d-model") a.d_model = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--heads") a.heads = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--mlp") a.mlp = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--layers") a.layers = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--classes") a.classes = vitattn::bench::int_flag(flag, value, 0, usage);
    else if (flag == "--threads") a.threads = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--repeat") a.repeat = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--warmup") a.warmup = vitattn::bench::int_flag(flag, value, 0, usage);
    else if (flag == "--dtype" && (std::strcmp(value, "f32") == 0 || std::strcmp(value, "bf16") == 0))
      a.bf16 = std::strcmp(value, "bf16") == 0;
    else usage("unknown option or value: " + flag + " " + value);
  }
  if (a.d_model == 0 || a.heads == 0 || a.mlp == 0) usage("--d-model, --heads and --mlp are required");
  if (a.d_model % a.heads != 0) usage("--d-model must be a multiple of --heads");
  return a;
}

// float → bf16, rounded to nearest even (what a bf16 forward's conversion does); no NaNs here.
std::uint16_t to_bf16(float f) {
  std::uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bf16(std::uint16_t h) {
  const std::uint32_t bits = static_cast<std::uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// One operand: its f32 values and, for the bf16 runs, their bf16 copy.
struct Buffer {
  std::vector<float> f32;
  std::vector<std::uint16_t> bf16;
};

// c (m, n) = a (m, k) · op(b), row-major; op(b) = bᵀ (b stored (n, k)) when b_transposed.
struct Product {
  std::string kind;
  dnnl_dim_t m, n, k;
  const Buffer* a;
  std::size_t a_offset;
  dnnl_dim_t lda;
  const Buffer* b;
  std::size_t b_offset;
  dnnl_dim_t ldb;
  bool b_transposed;
  Buffer* c;
  std::size_t c_offset;
  dnnl_dim_t ldc;
};

// Every buffer of one forward, and the products that read and write them.
struct Plan {
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<Product> products;
  double gflop = 0.0;
};

Buffer* new_buffer(Plan& plan, std::size_t size, std::mt19937& rng, bool random) {
  auto buf = std::make_unique<Buffer>();
  buf->f32.assign(size, 0.0f);
  if (random) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& v : buf->f32) v = normal(rng);
  }
  plan.buffers.push_back(std::move(buf));
  return plan.buffers.back().get();
}

void add(Plan& plan, Product p) {
  plan.gflop += 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / 1e9;
  plan.products.push_back(std::move(p));
}

// x·Wᵀ with W (out, in) fresh random, a (m, in) given: the forward's linear layers.
void linear(Plan& plan, std::mt19937& rng, const std::string& kind, const Buffer* a, dnnl_dim_t m, dnnl_dim_t in,
            dnnl_dim_t out, Buffer* c) {
  const Buffer* w = new_buffer(plan, static_cast<std::size_t>(out * in), rng, true);
  add(plan, {kind, m, out, in, a, 0, in, w, 0, in, true, c, 0, out});
}

Plan make_plan(const Args& args) {
  std::mt19937 rng(20240229u);
  Plan plan;
  const dnnl_dim_t patches = 196, patch_dim = 3 * 16 * 16, n = patches + 1;
  const dnnl_dim_t d = args.d_model, m = args.mlp, dh = d / args.heads;
  const auto size = [](dnnl_dim_t rows, dnnl_dim_t cols) { return static_cast<std::size_t>(rows * cols); };
  const Buffer* image = new_buffer(plan, size(patches, patch_dim), rng, true);
  Buffer* tokens = new_buffer(plan, size(patches, d), rng, false);
  linear(plan, rng, "patch", image, patches, patch_dim, d, tokens);
  // The activations are random rather than computed (no norms, softmax or GELU run), and
  // shared by the layers, as in bench/gemm_floor.py.
  const Buffer* xn = new_buffer(plan, size(n, d), rng, true);
  Buffer* qkv = new_buffer(plan, size(n, 3 * d), rng, true);
  Buffer* scores = new_buffer(plan, size(args.heads, n * n), rng, true);  // one (n, n) per head
  Buffer* heads = new_buffer(plan, size(n, d), rng, true);
  Buffer* hidden = new_buffer(plan, size(n, m), rng, true);
  Buffer* out = new_buffer(plan, size(n, d), rng, false);
  for (int layer = 0; layer < args.layers; ++layer) {
    linear(plan, rng, "qkv", xn, n, d, 3 * d, qkv);
    for (int h = 0; h < args.heads; ++h) {
      const auto q = static_cast<std::size_t>(h * dh), k = static_cast<std::size_t>(d + h * dh),
                 v = static_cast<std::size_t>(2 * d + h * dh), s = static_cast<std::size_t>(h) * size(n, n);
      add(plan, {"qk", n, n, dh, qkv, q, 3 * d, qkv, k, 3 * d, true, scores, s, n});
      add(plan, {"av", n, dh, n, scores, s, n, qkv, v, 3 * d, false, heads, static_cast<std::size_t>(h * dh), d});
    }
    linear(plan, rng, "proj", heads, n, d, d, out);
    linear(plan, rng, "fc1", xn, n, d, m, hidden);
    linear(plan, rng, "fc2", hidden, n, m, d, out);
  }
  if (args.classes > 0) linear(plan, rng, "head", xn, 1, d, args.classes, new_buffer(plan, size(1, args.classes), rng, false));
  return plan;
}

void to_bf16(Plan& plan) {
  for (auto& buf : plan.buffers) {
    buf->bf16.resize(buf->f32.size());
    for (std::size_t i = 0; i < buf->f32.size(); ++i) buf->bf16[i] = to_bf16(buf->f32[i]);
  }
}

void run(const Product& p, bool bf16) {
  const char tb = p.b_transposed ? 'T' : 'N';
  float* c = p.c->f32.data() + p.c_offset;
  const dnnl_status_t status =
      bf16 ? dnnl_gemm_bf16bf16f32('N', tb, p.m, p.n, p.k, 1.0f, p.a->bf16.data() + p.a_offset, p.lda,
                                   p.b->bf16.data() + p.b_offset, p.ldb, 0.0f, c, p.ldc)
           : dnnl_sgemm('N', tb, p.m, p.n, p.k, 1.0f, p.a->f32.data() + p.a_offset, p.lda,
                        p.b->f32.data() + p.b_offset, p.ldb, 0.0f, c, p.ldc);
  if (status != dnnl_success) {
    std::cerr << "vitattn_dnnl_products: oneDNN refused the " << p.kind << " product (status " << status << ")\n";
    std::exit(1);
  }
}

// a few entries of p's output against a dot product in double over the operands it read
// (their bf16 values for bf16); run right after p, before any later product overwrites them.
bool spot_check(const Product& p, bool bf16) {
  const auto value = [bf16](const Buffer* buf, std::size_t i) {
    return static_cast<double>(bf16 ? from_bf16(buf->bf16[i]) : buf->f32[i]);
  };
  for (const auto& [i, j] : {std::pair<dnnl_dim_t, dnnl_dim_t>{0, 0}, {p.m - 1, p.n - 1}, {p.m / 2, p.n / 3}}) {
    double want = 0.0, scale = 0.0;
    for (dnnl_dim_t t = 0; t < p.k; ++t) {
      const double term = value(p.a, p.a_offset + static_cast<std::size_t>(i * p.lda + t)) *
                          value(p.b, p.b_offset + static_cast<std::size_t>(p.b_transposed ? j * p.ldb + t : t * p.ldb + j));
      want += term;
      scale += std::abs(term);
    }
    const double got = p.c->f32[p.c_offset + static_cast<std::size_t>(i * p.ldc + j)];
    if (std::abs(got - want) > 1e-3 * scale + 1e-6) {
      std::cerr << "vitattn_dnnl_products: " << p.kind << " (" << i << ", " << j << ") is " << got << ", not " << want
                << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  omp_set_num_threads(args.threads);
  Plan plan = make_plan(args);
  if (args.bf16) to_bf16(plan);
  std::map<std::string, bool> checked;
  for (const Product& p : plan.products) {
    run(p, args.bf16);
    if (!checked[p.kind] && !spot_check(p, args.bf16)) return 1;
    checked[p.kind] = true;
  }
  using clock = std::chrono::steady_clock;
  for (int i = 1; i < args.warmup; ++i)  // the checked pass above was the first warm-up
    for (const Product& p : plan.products) run(p, args.bf16);
  std::vector<double> seconds, cpu_seconds;
  std::map<std::string, std::vector<double>> by_kind;
  for (int r = 0; r < args.repeat; ++r) {
    std::map<std::string, double> kind_seconds;
    const std::clock_t c0 = std::clock();
    const auto t0 = clock::now();
    for (const Product& p : plan.products) {
      const auto p0 = clock::now();
      run(p, args.bf16);
      kind_seconds[p.kind] += std::chrono::duration<double>(clock::now() - p0).count();
    }
    seconds.push_back(std::chrono::duration<double>(clock::now() - t0).count());
    cpu_seconds.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    for (const auto& [kind, s] : kind_seconds) by_kind[kind].push_back(s);
  }
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::printf("{\"d_model\": %d, \"heads\": %d, \"mlp\": %d, \"layers\": %d, \"classes\": %d, \"dtype\": \"%s\", ",
              args.d_model, args.heads, args.mlp, args.layers, args.classes, args.bf16 ? "bf16" : "f32");
  std::printf("\"threads\": %d, \"omp_max_threads\": %d, \"omp_wait_policy\": \"%s\", ", args.threads,
              omp_get_max_threads(), wait_policy ? wait_policy : "");
  const dnnl_version_t* version = dnnl_version();
  std::printf("\"onednn\": \"%d.%d.%d\", \"products\": %zu, \"gflop\": %.6f, ", version->major, version->minor,
              version->patch, plan.products.size(), plan.gflop);
  std::printf("\"warmup\": %d, \"repeat\": %d, \"seconds\": [", args.warmup, args.repeat);
  for (std::size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.6f", i ? ", " : "", seconds[i]);
  std::printf("], \"median\": %.6f, \"cpu_median\": %.6f, \"by_kind\": {", median(seconds), median(cpu_seconds));
  bool first = true;
  for (const auto& [kind, s] : by_kind) {
    std::printf("%s\"%s\": %.6f", first ? "" : ", ", kind.c_str(), median(s));
    first = false;
  }
  std::printf("}}\n");
  return 0;
}
