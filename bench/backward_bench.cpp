// vitattn_backward_bench: the cost of a class-logit backward pass (core/vit_backward.hpp)
// against the forward, on one fixed random 3×224×224 image. A benchmark helper for
// bench/run_backward_bench.sh, not a test.
//
//   vitattn_backward_bench --model M.safetensors --threads T --repeat N [--warmup W] [--mode forward|gradient|both]
//
// Times, each N times after W untimed: the plain forward (what every attention map costs), the
// forward that records the tape, and encoder_backward of the top-1 logit. Prints one JSON
// object with the medians (wall, and CPU of the whole process: every thread), and
// the process's peak resident memory: run it once with --mode forward and once with
// --mode gradient to compare the peaks of a gradient run and a plain one.
// The allocator is set as the `vitattn` command sets it (pipeline/memory_reuse.hpp), so that the
// forwards here pay for fresh pages what the command's pay.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "core/classify.hpp"
#include "core/vit.hpp"
#include "core/vit_backward.hpp"
#include "model/vit_loader.hpp"
#include "pipeline/memory_reuse.hpp"
#include "pipeline/threads.hpp"
#include "tensors/tensor_file.hpp"

namespace {

using vitattn::bench::median;
using vitattn::bench::proc_status_mb;
using vitattn::bench::random_image;

struct Args {
  std::string model;
  int threads = 1;
  int repeat = 10;
  int warmup = 2;
  std::string mode = "both";  // forward: the plain forward only; gradient: forward with tape + backward; both
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "vitattn_backward_bench: " << why << "\n"
            << "usage: vitattn_backward_bench --model M.safetensors --threads T --repeat N [--warmup W] "
               "[--mode forward|gradient|both]\n";
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
    else if (flag == "--mode") {
      a.mode = value;
      if (a.mode != "forward" && a.mode != "gradient" && a.mode != "both") usage("--mode is forward, gradient or both");
    }
    else usage("unknown option " + flag);
  }
  if (a.model.empty()) usage("--model is required");
  return a;
}

struct Timing {
  std::vector<double> wall, cpu;
  template <class F>
  void run(F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    f();
    cpu.push_back(static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC);
    wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
};

void print_timing(const char* name, const Timing& t) {
  std::printf("\"%s_median\": %.6f, \"%s_cpu_median\": %.6f, ", name, t.wall.empty() ? 0.0 : median(t.wall), name,
              t.cpu.empty() ? 0.0 : median(t.cpu));
}

}  // namespace

int main(int argc, char** argv) {
  vitattn::pipeline::reuse_freed_memory();  // before any thread, as vitattn's main
  const Args args = parse(argc, argv);
  try {
    const vitattn::VitModel model = vitattn::model::load_vit(vitattn::tensors::load_tensor_file(args.model)).model;
    const double rss_loaded_mb = proc_status_mb("VmRSS");
    vitattn::pipeline::set_library_threads(args.threads);
    const vitattn::ImageTensor x = random_image(224);
    const bool plain = args.mode != "gradient", gradient = args.mode != "forward";
    Timing forward_t, taped_t, backward_t;
    float checksum = 0.0f;
    // One tape for every run, as a worker keeps one for its images: its matrices keep their
    // storage from one forward to the next (a fresh tape each time adds the page faults of a
    // whole tape of new memory per forward; its size: vit.hpp's ForwardTape).
    vitattn::ForwardTape tape;
    for (int i = 0; i < args.warmup + args.repeat; ++i) {
      const bool timed = i >= args.warmup;
      if (plain) {
        Timing scratch;
        (timed ? forward_t : scratch).run([&] { checksum += vitattn::forward(model, x).logits(0); });
      }
      if (!gradient) continue;
      vitattn::ForwardOptions options;
      options.tape = &tape;
      vitattn::ForwardResult result;
      Timing scratch;
      (timed ? taped_t : scratch).run([&] { result = vitattn::forward(model, x, options); });
      const int c = vitattn::top_classes(result.logits, 1).front().index;
      (timed ? backward_t : scratch).run([&] {
        checksum += vitattn::encoder_backward(model, tape, c, true, nullptr)(0, 0);
      });
    }
    std::printf("{\"model\": \"%s\", \"d_model\": %d, \"n_layers\": %d, \"threads\": %d, \"mode\": \"%s\", ",
                args.model.c_str(), model.d_model(), model.n_layers(), args.threads, args.mode.c_str());
    std::printf("\"repeat\": %d, \"warmup\": %d, ", args.repeat, args.warmup);
    print_timing("forward", forward_t);
    print_timing("taped_forward", taped_t);
    print_timing("backward", backward_t);
    std::printf("\"checksum\": %.6g, \"rss_loaded_mb\": %.1f, \"rss_peak_mb\": %.1f}\n", static_cast<double>(checksum),
                rss_loaded_mb, proc_status_mb("VmHWM"));
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "vitattn_backward_bench: " << e.what() << "\n";
    return 1;
  }
}
