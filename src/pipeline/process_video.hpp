#pragma once
// One video, start to finish: its frames decoded, each drawn exactly as process_image draws an
// image (the same functions, the same options), and written as an attention video of the
// same size, and the same frame rate and frame count unless `every` or `max_frames` says
// otherwise. Decoding, the model and encoding overlap: three threads joined by small queues.
// With frames_at_once > 1 the model stage's forwards run on that many threads of their own,
// several frames side by side; the frames are still drawn, smoothed and written in order.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>

#include "batch_plan.hpp"
#include "video/video_writer.hpp"
#include "process_image.hpp"

namespace vitattn::pipeline {

struct VideoOptions {
  video::VideoCodec codec = video::VideoCodec::h264_mp4;  // its extension is OutputSet::video_extension
  bool frames_dir = false;      // also each frame's overlay as <name>_frames/<frame index, 6 digits>_attn.png
  int every = 1;                // draw frames 0, every, 2·every, …; the video's rate is fps / every
  std::int64_t max_frames = 0;  // at most this many frames drawn; 0: all
  // Exponential moving average of the maps across the drawn frames, against flicker:
  // s₀ = m₀, sₜ = a·mₜ + (1 − a)·sₜ₋₁ with a = smooth in (0, 1]; unset: each frame's own map.
  std::optional<float> smooth;
  // Frames whose forwards run side by side, each on a thread of its own; their results are
  // taken back in frame order, so the outputs are the same bytes whatever it is. 1: one frame
  // at a time, on the thread that draws. Above 1, the caller gives the libraries one thread
  // each meanwhile (threads.hpp), so that the forwards use this many cores, not more.
  int frames_at_once = 1;
  std::function<void(std::int64_t)> on_frames_expected;  // the frames this video should give, when known
  std::function<void()> on_frame;                         // one more frame written (any thread)
  std::function<void(const std::string&)> warn;             // hears "PATH: …" about the video written
  std::function<bool()> stop;                             // polled per frame: true abandons the video
};

// The frames-dir folder of a video job: "<output_base>_frames".
std::filesystem::path frames_folder(const InputJob& job);

// Throws Error with a one-line message naming the video (nothing under its output names then),
// Error about image::roles::pixel_limit when its frames are over the limit. A truncated or corrupt video
// gives the frames decoded before the damage and a warning through options.damage (an Error
// with damage.strict, or when no frame decodes). Writes output_paths(job.output_base, outputs,
// true), the video last but the settings record (one commit: job_record.hpp), and with
// frames_dir the frames' PNGs. As process_image: `options.view` checked and `outputs` =
// written_outputs(model, options), once for the batch, here with outputs.video_extension =
// extension(video.codec).
void process_video(const std::filesystem::path& out_dir, const InputJob& job, const VitModel& model,
                   const ProcessOptions& options, const VideoOptions& video, const OutputSet& outputs);

}  // namespace vitattn::pipeline
