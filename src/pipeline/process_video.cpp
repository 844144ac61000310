#include "process_video.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "frame_queue.hpp"
#include "files/file_io.hpp"
#include "tensors/npy.hpp"
#include "video/video_reader.hpp"
#include "job_record.hpp"
#include "output_folders.hpp"

namespace vitattn::pipeline {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kQueued = 4;  // frames in flight between two stages

struct Decoded {
  std::int64_t index = 0;  // the frame's number in the source video
  std::int64_t seq = 0;    // its place among the frames drawn: 0, 1, 2, …
  cv::Mat bgr;             // (H, W) 8-bit
};

struct Drawn {
  std::int64_t index;
  cv::Mat frame;  // the overlay, or the sheet of heads with --head all
};

// What the decoder stage saw: how far it got and why it stopped.
struct DecodeEnd {
  std::int64_t decoded = 0;   // frames read from the file
  bool stream_ended = false;  // read() failed (the end, or damage), rather than max_frames or a stop
  std::exception_ptr error;
};

// Every `every`-th frame, at most `max_frames` of them, into `out`.
void decode_frames(video::VideoReader& reader, const VideoOptions& video, FrameQueue<Decoded>& out, DecodeEnd& end) {
  try {
    std::int64_t sent = 0;
    for (std::int64_t index = 0;; ++index) {
      if (video.max_frames > 0 && sent >= video.max_frames) break;
      cv::Mat bgr;
      if (!reader.read(bgr)) {
        end.stream_ended = true;
        break;
      }
      ++end.decoded;
      if (index % video.every != 0) continue;
      if (!out.push({index, sent, std::move(bgr)})) break;  // the model stage gave up
      ++sent;
    }
  } catch (...) {
    end.error = std::current_exception();
  }
  out.close();
}

// Writes each drawn frame to the video (and as a PNG with frames_dir), in order.
void encode_frames(const fs::path& video_path, const fs::path& frames_dir, double fps, const ProcessOptions& options,
                   const VideoOptions& video, FrameQueue<Drawn>& in, std::unique_ptr<video::VideoWriter>& writer,
                   std::exception_ptr& error) {
  try {
    for (std::optional<Drawn> d; (d = in.pop());) {
      // The sheet's size is known at the first frame; it stays the same for the whole video.
      if (!writer) writer = std::make_unique<video::VideoWriter>(video_path, video.codec, fps, d->frame.cols, d->frame.rows);
      writer->write(d->frame);
      if (!frames_dir.empty())
        image::write_image_atomic(frames_dir / fmt::format("{:06d}{}", d->index, overlay_suffix(image::extension(options.format.format))),
                               d->frame, options.format);
      if (video.on_frame) video.on_frame();
    }
  } catch (...) {
    error = std::current_exception();
    in.close();  // the model stage stops at its next push
  }
}

// s (grid_h, grid_w) ← a·m + (1 − a)·s, per map; the first frame's maps as they are.
void smooth_maps(std::vector<Matrix>& maps, std::vector<Matrix>& state, float a) {
  if (state.empty()) {
    state = maps;
    return;
  }
  for (std::size_t i = 0; i < maps.size(); ++i) {
    state[i] = a * maps[i] + (1.0f - a) * state[i];
    maps[i] = state[i];
  }
}

// <name>_frames: made when missing, never through a symbolic link.
void make_frames_folder(const fs::path& dir, const InputJob& job) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::is_symlink(st))
    throw Error(files::display(job.input) + ": " + files::display(dir) + " is a symbolic link; not followed");
  if (fs::exists(st) && !fs::is_directory(st))
    throw Error(files::display(job.input) + ": " + files::display(dir) + " exists and is not a folder");
  fs::create_directory(dir, ec);
  if (ec) throw Error(files::display(job.input) + ": cannot make " + files::display(dir) + ": " + ec.message());
}

// One frame's maps (the class-specific ones for the frame's own top-1 class unless classes are
// given) and, when `logits` is given, the classifier's logits; the core's errors name no file
// (activations that became non-finite): the video's and the frame's.
std::vector<NamedMap> frame_maps(const Decoded& d, const VitModel& model, const ProcessOptions& options, InputGrid& grid,
                                 const std::string& source, RowVector* logits) {
  return naming_source(fmt::format("{}: frame {}", source, d.index),
                       [&] { return image_maps(d.bgr, model, options, &grid, logits); });
}

// A frame and what its forward gave (frame_maps), or the error it threw: that one is rethrown
// when the frame's turn comes, so that a video fails at the frame, and with the message, it
// would fail at one frame at a time.
struct Computed {
  Decoded frame;
  InputGrid grid;
  RowVector logits;  // with `logits` (--top)
  std::vector<NamedMap> named;
  std::exception_ptr error;
};

Computed compute_frame(Decoded d, const VitModel& model, const ProcessOptions& options, const std::string& source,
                       bool logits) {
  Computed c;
  c.frame = std::move(d);
  try {
    c.named = frame_maps(c.frame, model, options, c.grid, source, logits ? &c.logits : nullptr);
  } catch (...) {
    c.error = std::current_exception();
  }
  return c;
}

// One of the frames_at_once threads: computes the frames it takes, side by side with the others,
// and puts each under its place in the video. An error outside a frame's forward closes both
// queues, so that the other stages end, and is kept in `error` for the caller.
void compute_frames(FrameQueue<Decoded>& in, FrameReorder<Computed>& out, const VitModel& model,
                    const ProcessOptions& options, const std::string& source, bool logits, std::exception_ptr& error) {
  try {
    for (std::optional<Decoded> d; (d = in.pop());) {
      const std::int64_t seq = d->seq;
      if (!out.put(seq, compute_frame(std::move(*d), model, options, source, logits))) break;  // the drawing stage gave up
    }
  } catch (...) {
    error = std::current_exception();
    in.close();
    out.close();
  }
  out.done();
}

// The video's outputs but its settings record (process_video's commit writes that).
void draw_video(const InputJob& job, const VitModel& model, const ProcessOptions& options, const VideoOptions& video,
                const OutputSet& outputs) {
  const std::string source = files::display(job.input);

  video::VideoReader reader(job.input, options.max_pixels);
  const video::VideoInfo& info = reader.info();
  if (video.on_frames_expected && info.frame_count > 0) {
    std::int64_t n = (info.frame_count + video.every - 1) / video.every;
    if (video.max_frames > 0) n = std::min(n, video.max_frames);
    video.on_frames_expected(n);
  }
  const fs::path frames_dir = video.frames_dir ? frames_folder(job) : fs::path();
  if (video.frames_dir) make_frames_folder(frames_dir, job);

  FrameQueue<Decoded> decoded(kQueued);
  FrameQueue<Drawn> drawn(kQueued);
  DecodeEnd decode_end;
  std::unique_ptr<video::VideoWriter> writer;
  std::exception_ptr encode_error;
  const fs::path video_path = with_suffix(job.output_base, video_output_suffixes(outputs).front().c_str());
  std::vector<float> saved;  // the drawn maps, frame after frame: (frames, [n_maps,] grid_h, grid_w)
  std::vector<std::uint64_t> map_shape;  // (frames, [n_maps,] grid_h, grid_w), set at the first frame
  std::int64_t n_drawn = 0;
  std::vector<FramePrediction> classes;  // with --top: each drawn frame's, in order
  // The forwards: with frames_at_once > 1 on that many threads side by side, their results
  // taken back in frame order (at most `window` held); else here, one frame after the other.
  const int n_forwards = std::max(1, video.frames_at_once);
  const std::size_t window = std::max(kQueued, static_cast<std::size_t>(n_forwards));
  FrameReorder<Computed> computed(window, n_forwards);
  std::vector<std::exception_ptr> forward_errors(static_cast<std::size_t>(n_forwards));
  const auto stop_if_asked = [&] {
    if (video.stop && video.stop()) throw Error(fmt::format("{}: interrupted after {} frames; nothing written", source, n_drawn));
  };
  // The next frame in order with its forward done, nullopt after the last; a stop asked for
  // (Ctrl-C) ends the video before the frame is drawn.
  const auto next_frame = [&]() -> std::optional<Computed> {
    if (n_forwards > 1) {
      std::optional<Computed> c = computed.take();
      if (c) stop_if_asked();
      return c;
    }
    std::optional<Decoded> d = decoded.pop();
    if (!d) return std::nullopt;
    stop_if_asked();
    return compute_frame(std::move(*d), model, options, source, outputs.top);
  };
  {
    std::jthread decoder([&] { decode_frames(reader, video, decoded, decode_end); });
    std::jthread encoder(
        [&] { encode_frames(video_path, frames_dir, info.fps / video.every, options, video, drawn, writer, encode_error); });
    std::vector<std::jthread> forwards;  // joined first on the way out (declared last)
    // The drawing stage, on this thread, in frame order; any exception closes every queue so
    // that the others end.
    try {
      if (n_forwards > 1)
        for (std::size_t i = 0; i < forward_errors.size(); ++i)
          forwards.emplace_back([&, i] { compute_frames(decoded, computed, model, options, source, outputs.top, forward_errors[i]); });
      std::vector<Matrix> ema;  // (grid_h, grid_w) each, with smooth
      for (std::optional<Computed> c; (c = next_frame());) {
        if (c->error) std::rethrow_exception(c->error);
        const Decoded& d = c->frame;
        const InputGrid& grid = c->grid;
        const std::vector<NamedMap>& named = c->named;
        if (outputs.top) classes.push_back({d.index, top_classes(c->logits, options.top->k, model.class_probability())});
        std::vector<Matrix> maps;
        for (const NamedMap& m : named) maps.push_back(m.map);
        if (n_drawn == 0 && options.on_grid) options.on_grid(job, grid);
        if (video.smooth) smooth_maps(maps, ema, *video.smooth);
        const std::vector<cv::Mat> overlays = draw_overlays(d.bgr, maps, options);
        if (options.save_attention) {
          if (map_shape.empty()) {  // the frame count (first) is known at the end
            const auto h = static_cast<std::uint64_t>(grid.grid_h), w = static_cast<std::uint64_t>(grid.grid_w);
            map_shape = maps.size() > 1 ? std::vector<std::uint64_t>{0, maps.size(), h, w} : std::vector<std::uint64_t>{0, h, w};
          }
          for (const Matrix& m : maps) saved.insert(saved.end(), m.data(), m.data() + m.size());
        }
        if (!drawn.push({d.index, overlays.size() == 1 ? captioned(overlays.front(), named.front()) : map_sheet(overlays, titles_of(named))})) break;
        ++n_drawn;
      }
      decoded.close();  // the encoder gave up: the decoder stops at its next push
      computed.close();  // and the forward threads at their next put
    } catch (...) {
      decoded.close();
      computed.close();
      drawn.close();
      throw;  // the jthreads join on the way out; the writer's temporary is removed with it
    }
    drawn.close();
  }
  for (const std::exception_ptr& e : forward_errors)
    if (e) std::rethrow_exception(e);
  if (encode_error) std::rethrow_exception(encode_error);
  if (decode_end.error) std::rethrow_exception(decode_end.error);
  if (n_drawn == 0 || !writer)
    throw Error(decode_end.decoded == 0 && info.frame_count == 0
                    ? source + ": video has no frames"
                    : source + ": no frame could be decoded (corrupt or truncated video, or a codec FFmpeg here cannot decode)");
  // Fewer frames than the header announces: damage stopped the decoder (a file cut short, a
  // corrupt frame). What came before is drawn, as a damaged image is.
  if (decode_end.stream_ended && info.frame_count > 0 && decode_end.decoded < info.frame_count) {
    const std::string what = fmt::format("truncated or corrupt video: decoded {} of the {} frames its header announces",
                                         decode_end.decoded, info.frame_count);
    if (options.damage.strict) throw Error({image::roles::strict_decoding, ""}, what + "; refused as damaged", source);
    if (options.damage.warn) options.damage.warn(source + ": " + what + "; wrote those");
  }
  if (const cv::Size f = writer->frame_size(), s = writer->encoded_size(); video.warn && f != s)
    video.warn(fmt::format("{}: {}x{} frames written as {}x{}, their last column or row repeated: {} needs an even width "
                           "and height", files::display(video_path), f.width, f.height, s.width, s.height,
                           video::describe(video.codec)));
  if (options.save_attention) {
    map_shape.front() = static_cast<std::uint64_t>(n_drawn);  // n_drawn > 0 (checked above), so map_shape is set
    tensors::write_npy(with_suffix(job.output_base, map_values_suffix("").c_str()), saved.data(), map_shape);
  }
  if (outputs.top) {
    const std::string csv = frame_predictions_csv(job.input, classes, options.top->labels);
    files::write_file_atomic(with_suffix(job.output_base, batch_file(&OutputSet::top).part_suffix), csv.data(), csv.size());
  }
  writer->commit();  // last: when the video exists, the rest does too
}

}  // namespace

fs::path frames_folder(const InputJob& job) { return with_suffix(job.output_base, frames_suffix().c_str()); }

void process_video(const fs::path& out_dir, const InputJob& job, const VitModel& model, const ProcessOptions& asked,
                   const VideoOptions& video, const OutputSet& outputs) {
  const ProcessOptions options = checked_options(model, asked);
  prepare_output_path(out_dir, job, outputs);
  commit_job(job, outputs, [&] { draw_video(job, model, options, video, outputs); });
}

}  // namespace vitattn::pipeline
