#include "eval_job.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <string_view>
#include <system_error>
#include <thread>

#include "batch_plan.hpp"
#include "core/classify.hpp"
#include "core/error.hpp"
#include "core/faithfulness.hpp"
#include "core/model_randomisation.hpp"
#include "core/rank_correlation.hpp"
#include "files/file_io.hpp"
#include "image/image_loader.hpp"
#include "job_outputs.hpp"
#include "job_record.hpp"
#include "output_folders.hpp"
#include "output_guard.hpp"
#include "predictions.hpp"
#include "report/eval_page.hpp"
#include "tensors/npy.hpp"
#include "threads.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

// What every job reads, made once.
struct EvalContext {
  const EvalRequest& request;
  const EvalEvents& events;
  std::vector<EncoderBlock> randomised;  // per layer, its block re-drawn (empty without the sanity test)
};

void warn(const EvalEvents& events, const std::string& line) {
  if (events.warn) events.warn(line);
}

// The target: the image's label, else the top-1 of its logits.
std::optional<ChosenClass> label_of(const EvalLabels& labels, const fs::path& input) {
  for (const std::string& key : {input.string(), input.filename().string()})
    if (const auto it = labels.find(key); it != labels.end()) return it->second;
  return std::nullopt;
}

// The mask of `input` in the masks folder: <stem>.png; nullopt (a warning) when there is none.
std::optional<cv::Mat> load_mask(const EvalContext& ctx, const fs::path& input, const cv::Mat& image) {
  const fs::path path = *ctx.request.masks / eval_mask_name(input);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    warn(ctx.events, fmt::format("{}: no mask for {}: left out of the segmentation metrics", files::display(path),
                                 files::display(input)));
    return std::nullopt;
  }
  cv::Mat mask = image::load_image(path, ctx.request.process.max_pixels, ctx.request.process.damage);
  if (mask.cols != image.cols || mask.rows != image.rows)
    throw Error(fmt::format("{}: the mask is {}×{}, its image {} is {}×{}", files::display(path), mask.cols, mask.rows,
                            files::display(input), image.cols, image.rows));
  return mask;
}

// The maps of one model, in the view's slot order, each named by its method.
std::vector<std::pair<std::string, Matrix>> method_maps(const cv::Mat& bgr, const VitModel& model,
                                                        const ProcessOptions& options, InputGrid* grid,
                                                        RowVector* logits) {
  const std::vector<NamedMap> named = image_maps(bgr, model, options, grid, logits);
  const std::vector<MapSlot> slots = map_slots(options.view, model.n_heads);
  std::vector<std::pair<std::string, Matrix>> out;
  for (std::size_t i = 0; i < named.size() && i < slots.size(); ++i) out.emplace_back(method_name(slots[i].method), named[i].map);
  return out;
}

void save_map(const InputJob& job, const std::string& method, const Matrix& map) {
  tensors::write_npy(with_suffix(job.output_base, map_values_suffix(map_tag(method, std::nullopt)).c_str()), map);
}

// The segmentation metrics of one map against the image's mask (at the input's size).
void score_segmentation(MapScores& s, const Grid& upsampled, const Grid& mask, bool empty_mask) {
  const Grid normalised = min_max_normalised(upsampled);
  s.counts = segmentation_counts(normalised, mask);
  s.ap = segmentation_ap(normalised, mask);
  if (!empty_mask) s.pointing = pointing_hit(upsampled, mask);
}

ImageScores evaluate_image(const EvalContext& ctx, const InputJob& job) {
  const EvalRequest& q = ctx.request;
  const VitModel& model = *q.model;
  const cv::Mat bgr = image::load_image(job.input, q.process.max_pixels, q.process.damage);
  ProcessOptions options = q.process;
  const std::optional<ChosenClass> label = label_of(q.labels, job.input);
  if (label) options.view.classes = {*label};
  InputGrid g;
  RowVector logits;
  std::vector<std::pair<std::string, Matrix>> maps =
      naming_source(files::display(job.input), [&] { return method_maps(bgr, model, options, &g, &logits); });
  maps.emplace_back(random_baseline_name(), random_map(g.grid_h, g.grid_w, random_map_seed(job.input)));
  const bool classify = model.has_classifier();
  const int top1 = classify ? top_classes(logits, 1).front().index : -1;
  const int target = label ? label->index : top1;
  std::optional<Grid> mask;
  bool empty_mask = false;
  if (q.masks) {
    if (const std::optional<cv::Mat> m = load_mask(ctx, job.input, bgr)) {
      mask = mask_at_input(*m, g.input_w, g.input_h);
      empty_mask = mask->maxCoeff() == 0.0;
      if (empty_mask) {
        warn(ctx.events, fmt::format("{}: the mask of {} is empty (no object pixel): left out of the pointing game",
                                     files::display(*q.masks / eval_mask_name(job.input)),
                                     files::display(job.input)));
      }
    }
  }
  const ImageTensor x = image::preprocess(bgr, g.input_w, g.input_h, model.norm);
  ImageScores out;
  out.input = job.input;
  for (const auto& [method, map] : maps) {
    if (q.process.save_attention) save_map(job, method, map);
    MapScores s;
    s.method = method;
    const Grid up = upsample_bilinear(map, g.input_h, g.input_w);
    if (mask) score_segmentation(s, up, *mask, empty_mask);
    if (classify)
      naming_source(files::display(job.input), [&] {
        s.positive = perturbation_curve(model, x, up, Perturbation::positive, target, top1 == target, q.process.scale);
        s.negative = perturbation_curve(model, x, up, Perturbation::negative, target, top1 == target, q.process.scale);
        return 0;
      });
    out.maps.push_back(std::move(s));
  }
  if (!ctx.randomised.empty()) {
    ProcessOptions fixed = options;  // the randomised model's maps are of the same class, not its own top-1
    if (classify) fixed.view.classes = {ChosenClass{target, {}}};
    for (int depth = 1; depth <= model.n_layers(); ++depth) {
      const VitModel noisy = with_top_blocks(model, ctx.randomised, depth);
      const std::vector<std::pair<std::string, Matrix>> again =
          naming_source(files::display(job.input), [&] { return method_maps(bgr, noisy, fixed, nullptr, nullptr); });
      for (std::size_t i = 0; i < again.size(); ++i) out.maps[i].sanity.push_back(spearman(maps[i].second, again[i].second));
    }
  }
  out.done = true;
  return out;
}

// ---- the CSVs ----

std::string number(double v) { return fmt::format("{:.9g}", v); }

struct Row {
  std::string method, metric;
  double value = 0.0;
  std::size_t images = 0;
};

// The metrics of one image's map, in the CSVs' order.
std::vector<std::pair<const char*, double>> image_metrics(const MapScores& s) {
  std::vector<std::pair<const char*, double>> m;
  if (s.counts) {
    m.emplace_back("pixel_accuracy", pixel_accuracy(*s.counts));
    m.emplace_back("miou", mean_iou(*s.counts));
  }
  if (s.ap) m.emplace_back("map", *s.ap);
  if (s.pointing) m.emplace_back("pointing_game", *s.pointing ? 1.0 : 0.0);
  if (s.positive) m.emplace_back("positive_auc", s.positive->auc);
  if (s.negative) m.emplace_back("negative_auc", s.negative->auc);
  if (!s.sanity.empty()) m.emplace_back("sanity_spearman", s.sanity.back());
  return m;
}

// Every method's metrics over the images, in the methods' order.
std::vector<Row> summary_rows(const std::vector<ImageScores>& images, const std::vector<std::string>& methods) {
  std::vector<Row> rows;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    SegmentationCounts total;
    std::size_t seg = 0, pointed = 0, perturbed = 0, sane = 0;
    double ap = 0, hits = 0, pos = 0, neg = 0, sanity = 0;
    for (const ImageScores& im : images) {
      if (!im.done) continue;
      const MapScores& s = im.maps[i];
      if (s.counts) {
        total += *s.counts;
        ap += *s.ap;
        ++seg;
      }
      if (s.pointing) {
        hits += *s.pointing ? 1.0 : 0.0;
        ++pointed;
      }
      if (s.positive) {
        pos += s.positive->auc;
        neg += s.negative->auc;
        ++perturbed;
      }
      if (!s.sanity.empty()) {
        sanity += s.sanity.back();
        ++sane;
      }
    }
    const std::string& m = methods[i];
    if (seg) {
      rows.push_back({m, "pixel_accuracy", pixel_accuracy(total), seg});
      rows.push_back({m, "miou", mean_iou(total), seg});
      rows.push_back({m, "map", ap / static_cast<double>(seg), seg});
    }
    if (pointed) rows.push_back({m, "pointing_game", hits / static_cast<double>(pointed), pointed});
    if (perturbed) {
      rows.push_back({m, "positive_auc", pos / static_cast<double>(perturbed), perturbed});
      rows.push_back({m, "negative_auc", neg / static_cast<double>(perturbed), perturbed});
    }
    if (sane) rows.push_back({m, "sanity_spearman", sanity / static_cast<double>(sane), sane});
  }
  return rows;
}

std::string summary_csv(const std::vector<Row>& rows) {
  std::string out = "method,metric,value,images\n";
  for (const Row& r : rows) out += fmt::format("{},{},{},{}\n", csv_field(r.method), r.metric, number(r.value), r.images);
  return out;
}

std::string images_csv(const std::vector<ImageScores>& images) {
  std::string out = "file,method,metric,value,images\n";
  for (const ImageScores& im : images) {
    if (!im.done) continue;
    for (const MapScores& s : im.maps)
      for (const auto& [metric, value] : image_metrics(s))
        out += fmt::format("{},{},{},{},1\n", csv_field(im.input.string()), csv_field(s.method), metric, number(value));
  }
  return out;
}

// Mean curves over the images: perturbation accuracy per fraction removed, Spearman per depth.
struct CurvePoint {
  std::string method;
  const char* curve;
  double x = 0.0, value = 0.0;
  std::size_t images = 0;
};

std::vector<CurvePoint> mean_curves(const std::vector<ImageScores>& images, const std::vector<std::string>& methods) {
  std::vector<CurvePoint> points;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    auto mean_curve = [&](const char* name, auto&& values_of, auto&& x_of) {
      std::vector<double> sum;
      std::size_t n = 0;
      for (const ImageScores& im : images) {
        if (!im.done) continue;
        const std::vector<double>* v = values_of(im.maps[i]);
        if (v == nullptr || v->empty()) continue;
        if (sum.empty()) sum.assign(v->size(), 0.0);
        for (std::size_t k = 0; k < v->size(); ++k) sum[k] += (*v)[k];
        ++n;
      }
      for (std::size_t k = 0; k < sum.size(); ++k) points.push_back({methods[i], name, x_of(k), sum[k] / static_cast<double>(n), n});
    };
    const auto fraction = [](std::size_t k) { return static_cast<double>(k) / 10.0; };
    const auto depth = [](std::size_t k) { return static_cast<double>(k + 1); };
    mean_curve("positive", [](const MapScores& s) { return s.positive ? &s.positive->hits : nullptr; }, fraction);
    mean_curve("negative", [](const MapScores& s) { return s.negative ? &s.negative->hits : nullptr; }, fraction);
    mean_curve("sanity", [](const MapScores& s) { return &s.sanity; }, depth);
  }
  return points;
}

std::string curves_csv(const std::vector<CurvePoint>& points) {
  std::string out = "method,curve,x,value,images\n";
  for (const CurvePoint& p : points)
    out += fmt::format("{},{},{},{},{}\n", csv_field(p.method), p.curve, number(p.x), number(p.value), p.images);
  return out;
}

// eval.html: the summary's rows (their CSV text) and the curves.
void write_page(const fs::path& path, const std::vector<Row>& rows, const std::vector<CurvePoint>& points) {
  std::vector<report::EvalPageMetric> metrics;
  for (const char* m : {"pixel_accuracy", "miou", "map", "pointing_game", "positive_auc", "negative_auc", "sanity_spearman"})
    metrics.push_back({m, std::string_view(m) == "positive_auc" || std::string_view(m) == "sanity_spearman"});
  std::vector<report::EvalPageRow> page_rows;
  for (const Row& r : rows) page_rows.push_back({r.method, r.metric, number(r.value), r.images});
  std::vector<report::EvalPagePoint> page_points;
  for (const CurvePoint& p : points) page_points.push_back({p.method, p.curve, p.x, p.value});
  report::write_eval_page(path, metrics, page_rows, page_points);
}

void write_text(const fs::path& path, const std::string& text) { files::write_file_atomic(path, text.data(), text.size()); }

// The methods whose mean Spearman stays above kSanityFlag at every depth.
std::vector<std::string> flagged_methods(const std::vector<ImageScores>& images, const std::vector<std::string>& methods) {
  std::vector<std::string> flagged;
  for (std::size_t i = 0; i < methods.size(); ++i) {
    std::vector<double> sum;
    std::size_t n = 0;
    for (const ImageScores& im : images) {
      if (!im.done || im.maps[i].sanity.empty()) continue;
      if (sum.empty()) sum.assign(im.maps[i].sanity.size(), 0.0);
      for (std::size_t k = 0; k < sum.size(); ++k) sum[k] += im.maps[i].sanity[k];
      ++n;
    }
    if (n > 0 && std::all_of(sum.begin(), sum.end(), [&](double s) { return s / static_cast<double>(n) > kSanityFlag; }))
      flagged.push_back(methods[i]);
  }
  return flagged;
}

void check_request(const EvalRequest& q) {
  if (q.model == nullptr) throw Error("run_eval: no model");  // a caller's bug
  if (!q.model->has_classifier() && !q.masks)
    throw Error("the model has no classifier, so there is no perturbation test: give masks for the segmentation metrics");
  std::error_code ec;
  if (q.masks && !fs::is_directory(*q.masks, ec)) throw Error(files::display(*q.masks) + ": the masks are no folder");
}

// No output replaces a file the run reads (an input, the model, the labels) or another output:
// each image's part and maps, the four files (also under a shard, as the run without it will
// write them; eval.html replaces only a page vitattn wrote) and the log.
void check_outputs(const EvalRequest& q, const BatchPlan& plan, const OutputSet& outputs) {
  OutputGuard guard;
  for (const fs::path& in : q.inputs) guard.reads(in, roles::input);
  for (const auto& [file, role] : q.reads) guard.reads(file, role);
  guard.jobs(plan, outputs);
  for (const std::string& name : {eval_summary_name(), eval_images_name(), eval_curves_name()})
    guard.writes(q.output / name, roles::eval_files);
  guard.writes(q.output / eval_page_name(), roles::eval_files, files::FileKind::vitattn_page);
  for (const NamedWrite& w : q.writes) guard.writes(w.file, w.role, w.kind);
}

// The methods measured, in the CSVs' order: the view's, then the random baseline.
std::vector<std::string> measured_methods(const EvalRequest& q) {
  std::vector<std::string> methods;
  for (MapMethod m : q.process.view.methods) methods.push_back(method_name(m));
  methods.push_back(random_baseline_name());
  return methods;
}

// This process's jobs: the shard's (after planning, so that output names are a one-machine
// run's), less those skip_existing finds done (their parts are read back by gather).
void select_jobs(const EvalRequest& q, const OutputSet& outputs, BatchPlan& plan, const EvalEvents& events,
                 EvalOutcome& out) {
  if (q.shard) keep_shard(plan.jobs, *q.shard);
  if (!q.skip_existing) return;
  const std::vector<InputJob> before = plan.jobs;
  const FinishedJobs finished = drop_finished_jobs(plan, outputs);
  out.skipped = finished.done;
  out.redone = finished.redone.size();
  if (!events.already_done) return;
  std::vector<InputJob> done;  // plan.jobs is a subsequence of `before`
  std::size_t kept = 0;
  for (const InputJob& job : before) {
    if (kept < plan.jobs.size() && plan.jobs[kept].output_base == job.output_base) ++kept;
    else done.push_back(job);
  }
  events.already_done(done);
}

// Runs `jobs` on the workers: each measures its image and commits its part (and maps) with its
// record. Returns their scores, by job; a job that failed or did not start is not done.
std::vector<ImageScores> measure(const EvalContext& ctx, const OutputSet& outputs, const std::vector<InputJob>& jobs,
                                 EvalOutcome& out) {
  const EvalRequest& q = ctx.request;
  const EvalEvents& events = ctx.events;
  std::vector<ImageScores> scores(jobs.size());
  if (jobs.empty() || (events.should_stop && events.should_stop())) {
    out.not_started = jobs.size();
    return scores;
  }
  const int workers = std::max(1, std::min(q.jobs > 0 ? q.jobs : static_cast<int>(std::thread::hardware_concurrency()),
                                           static_cast<int>(jobs.size())));
  set_library_threads(workers > 1 ? 1 : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  const BatchCounts counts = run_on_workers(
      jobs, workers,
      [&](const InputJob& job) {
        ImageScores s;
        commit_job(job, outputs, [&] {
          s = evaluate_image(ctx, job);
          const std::string part = eval_part_text(s);
          files::write_file_atomic(with_suffix(job.output_base, eval_part_suffix().c_str()), part.data(), part.size());
        });
        scores[static_cast<std::size_t>(&job - jobs.data())] = std::move(s);  // committed: its record is there
      },
      events.should_stop,
      [&](const InputJob& job, const std::string& error, double ms) {
        if (!error.empty() && events.failed) events.failed(error);
        if (events.finished) events.finished(job, error, ms);
      });
  out.images = counts.written;
  out.failed = counts.failed;
  out.not_started = counts.not_started;
  return scores;
}

// Every done image of `batch`, in its order: those of `jobs` measured now from `scores`, the
// others from their parts (a part that cannot be read is a line in out.part_errors, left out).
std::vector<ImageScores> gather(const std::vector<InputJob>& batch, const std::vector<InputJob>& jobs,
                                std::vector<ImageScores> scores, const OutputSet& outputs,
                                const std::vector<std::string>& methods, EvalOutcome& out) {
  std::map<fs::path, std::size_t> now;
  for (std::size_t i = 0; i < jobs.size(); ++i) now.emplace(jobs[i].output_base, i);
  std::vector<ImageScores> gathered;
  for (const InputJob& job : batch) {
    if (const auto it = now.find(job.output_base); it != now.end() && scores[it->second].done) {
      gathered.push_back(std::move(scores[it->second]));
      continue;
    }
    if (job_state(job.output_base, outputs, false) != JobState::done) continue;
    try {
      gathered.push_back(read_eval_part(with_suffix(job.output_base, eval_part_suffix().c_str()), job.input, methods));
    } catch (const Error& e) {
      out.part_errors.emplace_back(e.what());
    }
  }
  return gathered;
}

// The images without a mask (left out of the segmentation metrics) and with an empty one.
void tell_masks(const std::vector<ImageScores>& images, const EvalRequest& q, EvalOutcome& out) {
  if (!q.masks) return;
  for (const ImageScores& im : images) {
    if (!im.done || im.maps.empty()) continue;
    const MapScores& s = im.maps.front();
    if (!s.counts) ++out.missing_masks;
    else if (!s.pointing) ++out.empty_masks;
  }
}

// eval.csv, eval_images.csv, eval_curves.csv and eval.html over `images`.
void write_eval_files(const fs::path& folder, const std::vector<ImageScores>& images,
                       const std::vector<std::string>& methods, EvalOutcome& out) {
  const std::vector<Row> rows = summary_rows(images, methods);
  const std::vector<CurvePoint> points = mean_curves(images, methods);
  const std::vector<std::pair<fs::path, std::string>> files{{folder / eval_summary_name(), summary_csv(rows)},
                                                            {folder / eval_images_name(), images_csv(images)},
                                                            {folder / eval_curves_name(), curves_csv(points)}};
  for (const auto& [path, text] : files) {
    write_text(path, text);
    out.written.push_back(path);
  }
  write_page(folder / eval_page_name(), rows, points);
  out.written.push_back(folder / eval_page_name());
}

}  // namespace

std::uint64_t random_map_seed(const fs::path& input) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (const char c : input.filename().string()) h = (h ^ static_cast<std::uint8_t>(c)) * 0x100000001b3ULL;
  return kRandomMapSeed ^ h;
}

Grid mask_at_input(const cv::Mat& mask, int input_w, int input_h) {
  Grid out(input_h, input_w);
  for (int y = 0; y < input_h; ++y) {
    const int sy = std::min(static_cast<int>((y + 0.5) * mask.rows / input_h), mask.rows - 1);
    const cv::Vec3b* row = mask.ptr<cv::Vec3b>(sy);
    for (int x = 0; x < input_w; ++x) {
      const int sx = std::min(static_cast<int>((x + 0.5) * mask.cols / input_w), mask.cols - 1);
      const cv::Vec3b& p = row[sx];
      out(y, x) = (p[0] | p[1] | p[2]) != 0 ? 1.0 : 0.0;
    }
  }
  return out;
}

OutputSet eval_outputs(const EvalRequest& q) {
  OutputSet o;
  o.eval = true;
  o.save_attention = q.process.save_attention;
  if (o.save_attention)
    for (const std::string& m : measured_methods(q)) o.map_tags.push_back(map_tag(m, std::nullopt));
  o.settings = q.settings;
  return o;
}

EvalOutcome run_eval(const EvalRequest& q, const EvalEvents& events) {
  check_request(q);
  const std::vector<std::string> methods = measured_methods(q);
  const OutputSet outputs = eval_outputs(q);
  BatchPlan plan = plan_batch(q.inputs, q.output, q.recursive, outputs);
  for (const std::string& e : plan.errors) throw Error(e);
  for (const std::string& w : plan.warnings) warn(events, w);
  if (plan.jobs.empty()) throw Error("no image found among the inputs");
  check_outputs(q, plan, outputs);
  if (events.checked) events.checked();
  EvalContext ctx{q, events, {}};
  if (q.sanity)
    for (int l = 0; l < q.model->n_layers(); ++l) ctx.randomised.push_back(randomised_block(q.model->blocks[static_cast<std::size_t>(l)], l));
  prepare_output_folder(q.output);

  EvalOutcome out;
  const std::vector<InputJob> batch = plan.jobs;  // the whole batch, in input order: what the batch files gather
  select_jobs(q, outputs, plan, events, out);
  std::vector<ImageScores> scores = measure(ctx, outputs, plan.jobs, out);
  out.jobs = plan.jobs;
  if (q.shard) {
    tell_masks(scores, q, out);
    out.flagged = flagged_methods(scores, methods);
    return out;
  }
  const std::vector<ImageScores> gathered = gather(batch, plan.jobs, std::move(scores), outputs, methods, out);
  out.gathered = gathered.size();
  tell_masks(gathered, q, out);
  out.flagged = flagged_methods(gathered, methods);
  write_eval_files(q.output, gathered, methods, out);
  return out;
}

}  // namespace vitattn::pipeline
