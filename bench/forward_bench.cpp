// vitattn_forward_bench: times the full ViT forward (all blocks, final norm, head) on one
// fixed random 3×224×224 image. A benchmark helper for bench/run_model_bench.sh, not a test.
//
//   vitattn_forward_bench --model M.safetensors --threads T --repeat N [--warmup W] [--precision fp32|bf16]
//
// Prints one JSON object: per-run wall seconds, their median, the median process CPU time, and the process's memory
// in MiB (resident set after loading, after the runs, and its peak) next to the model file size.
// The allocator is set as the `vitattn` command sets it (pipeline/memory_reuse.hpp), so that the
// forwards here pay for fresh pages what the command's pay.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/gemm_bf16.hpp"
#include "core/vit.hpp"
#include "tensors/safetensors.hpp"
#include "tensors/tensor_file.hpp"
#include "pipeline/memory_reuse.hpp"
#include "pipeline/threads.hpp"
#include "model/vit_loader.hpp"

namespace {

using vitattn::bench::median;
using vitattn::bench::proc_status_mb;
using vitattn::bench::random_image;

struct Args {
  std::string model;
  int threads = 1;
  int repeat = 10;
  int warmup = 2;
  vitattn::Precision precision = vitattn::Precision::fp32;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "vitattn_forward_bench: " << why << "\n"
            << "usage: vitattn_forward_bench --model M.safetensors --threads T --repeat N [--warmup W] "
               "[--precision fp32|bf16]\n";
  std::exit(2);
}


Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--model") a.model = value;
    else if (flag == "--threads") a.threads = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--repeat") a.repeat = vitattn::bench::int_flag(flag, value, 1, usage);
    else if (flag == "--warmup") a.warmup = vitattn::bench::int_flag(flag, value, 0, usage);
    else if (flag == "--precision" && std::string(value) == "fp32") a.precision = vitattn::Precision::fp32;
    else if (flag == "--precision" && std::string(value) == "bf16") a.precision = vitattn::Precision::bf16;
    else if (flag == "--precision") usage("--precision is fp32 or bf16");
    else usage("unknown option " + flag);
  }
  if (a.model.empty()) usage("--model is required");
  return a;
}

// User + system CPU seconds of this process so far, every thread.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

int main(int argc, char** argv) {
  vitattn::pipeline::reuse_freed_memory();  // before any thread, as vitattn's main
  const Args args = parse(argc, argv);
  try {
    using clock = std::chrono::steady_clock;
    const double rss_start_mb = proc_status_mb("VmRSS");
    const auto load_t0 = clock::now();
    const std::clock_t load_c0 = std::clock();
    const vitattn::VitModel model = vitattn::model::load_vit(vitattn::tensors::load_tensor_file(args.model)).model;
    const double load_cpu_seconds = static_cast<double>(std::clock() - load_c0) / CLOCKS_PER_SEC;
    const double load_seconds = std::chrono::duration<double>(clock::now() - load_t0).count();
    const double rss_loaded_mb = proc_status_mb("VmRSS"), rss_peak_loaded_mb = proc_status_mb("VmHWM");
    // The whole process up to a ready model, as a user waits for it: from the parent's
    // clock reading just before it started us (VITATTN_BENCH_SPAWN_NS, CLOCK_MONOTONIC, the
    // clock of steady_clock) through exec, the dynamic libraries, static initialisation and
    // the load; and the process's CPU seconds so far (getrusage: startup included).
    double ready_seconds = -1.0;
    if (const char* spawn = std::getenv("VITATTN_BENCH_SPAWN_NS")) {
      const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
      ready_seconds = static_cast<double>(now_ns - std::atoll(spawn)) * 1e-9;
    }
    const double ready_cpu_seconds = process_cpu_seconds();
    vitattn::pipeline::set_library_threads(args.threads);
    vitattn::set_gemm_precision(args.precision);
    const vitattn::ImageTensor x = random_image(224);

    float checksum = 0.0f;  // keeps the work observable
    for (int i = 0; i < args.warmup; ++i) checksum += vitattn::forward(model, x).logits(0);
    std::vector<double> seconds, cpu_seconds;
    for (int i = 0; i < args.repeat; ++i) {
      const auto t0 = clock::now();
      const std::clock_t c0 = std::clock();
      const vitattn::ForwardResult r = vitattn::forward(model, x);
      cpu_seconds.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
      seconds.push_back(std::chrono::duration<double>(clock::now() - t0).count());
      checksum += r.logits.size() ? r.logits(0) : r.tokens(0, 0);
    }

    std::printf("{\"model\": \"%s\", \"d_model\": %d, \"n_layers\": %d, \"n_heads\": %d, \"threads\": %d, ",
                args.model.c_str(), model.d_model(), model.n_layers(), model.n_heads, args.threads);
    std::printf("\"gemm_kernel\": \"%s\", \"precision\": \"%s\", ", vitattn::gemm_kernel_name(vitattn::gemm_kernel()).c_str(),
                vitattn::precision_name(args.precision).c_str());
    std::printf("\"warmup\": %d, \"repeat\": %d, \"seconds\": [", args.warmup, args.repeat);
    for (std::size_t i = 0; i < seconds.size(); ++i) std::printf("%s%.6f", i ? ", " : "", seconds[i]);
    std::printf("], \"median\": %.6f, \"cpu_median\": %.6f, \"checksum\": %.6g, ", median(seconds), median(cpu_seconds),
                static_cast<double>(checksum));
    std::printf("\"load_seconds\": %.6f, \"load_cpu_seconds\": %.6f, \"rss_peak_loaded_mb\": %.1f, ", load_seconds,
                load_cpu_seconds, rss_peak_loaded_mb);
    std::printf("\"ready_seconds\": %.6f, \"ready_cpu_seconds\": %.6f, ", ready_seconds, ready_cpu_seconds);
    std::printf("\"model_file_mb\": %.1f, \"rss_start_mb\": %.1f, \"rss_loaded_mb\": %.1f, \"rss_end_mb\": %.1f, "
                "\"rss_peak_mb\": %.1f}\n",
                static_cast<double>(std::filesystem::file_size(args.model)) / (1024.0 * 1024.0), rss_start_mb,
                rss_loaded_mb, proc_status_mb("VmRSS"), proc_status_mb("VmHWM"));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "vitattn_forward_bench: " << e.what() << "\n";
    return 1;
  }
}
