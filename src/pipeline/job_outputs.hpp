#pragma once
// The files one image job writes, and the batch files gathered from them, named in one place:
// every suffix, batch file and folder name of an output is spelled here, and the formats'
// extensions are the image and video writers' (image::extension, video::extension), asked
// from here. (A lint, tests/lint/test_output_names.py, finds a name spelled anywhere else.)
// Input protection, the symlink refusal, --skip-existing and the folder scan's "leave out
// vitattn's own outputs" all ask here, so an output added later is covered by all of them at
// once: add it to OutputSet and output_suffixes (and to `every` in is_output_name), and to
// written_outputs (process_image.hpp) that says when it is on. A batch file (one file in the
// output folder over every image of the batch) is one row of batch_files(): its per-image
// part is then a job output like the others, and batch_files.hpp writes the file.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "class_choice.hpp"
#include "files/file_kind.hpp"

namespace vitattn::pipeline {

// The default formats' extensions, ".png" and ".mp4", as the writers spell them
// (image::extension in image/image_writer.hpp, video::extension in video/video_writer.hpp;
// asked in job_outputs.cpp, since image_writer.hpp's image::ImageFormat is another type than
// image_formats.hpp's).
std::string default_image_extension();
std::string default_video_extension();

// Which of its outputs each job of a run writes.
struct OutputSet {
  std::string image_extension = default_image_extension();  // the overlays' format (--format): ".png", ".jpg" or ".webp"
  bool save_attention = false;  // <name>_attn.npy and <name>_cls.npy
  bool mask = false;            // <name>_mask.npy: --save-attention with --threshold
  int head_overlays = 0;        // --head all: <name>_attn_h<h>.png for h in 0…head_overlays−1
  // Several maps (--method all, --class a,b): each map's tag (map_tag), its overlay
  // <name>_attn<tag>.png beside the sheet of them all (<name>_attn.png), and with save_attention
  // its values <name>_cls<tag>.npy instead of <name>_cls.npy. Empty: one map, the plain names.
  std::vector<std::string> map_tags{};
  // With save_attention, the tags of the maps that also have values at the pixels (lrp's; "" when
  // it is the one map): <name>_pixels<tag>.npy each.
  std::vector<std::string> pixel_tags{};
  bool report = false;          // <name>_report.html: the interactive page (report_page.hpp)
  bool top = false;             // <name>_predictions.csv: the image's most likely classes (--top)
  bool faithfulness = false;    // <name>_faithfulness.csv: deletion and insertion AUCs of its maps (--faithfulness)
  bool heads = false;           // <name>_heads.csv: per layer and head, the token diagnostics' statistics (heads_part.hpp)
  bool pca = false;             // <name>_pca.png: the patch features' first three principal components (--pca)
  bool words = false;           // <name>_words.csv: each text's words' relevance (--save-attention with texts; words_part.hpp)
  // A video's overlay: "_attn.mp4" (H.264), or "_attn.avi" (MJPG) where no H.264 encoder is found.
  std::string video_extension = default_video_extension();
  // `vitattn eval`'s job (eval_job.hpp): its measurements <name>_eval.csv (eval_part.hpp), with
  // save_attention each map's values <name>_cls<tag>.npy for the map_tags, instead of the overlays.
  bool eval = false;
  // The settings that make these outputs' bytes, as the command line records them
  // (cli/settings_record.hpp): each job writes them last, as <name>_settings.txt, and a job is
  // done only when its record is this (job_record.hpp). Empty: no record is written nor asked for.
  std::string settings{};
};

// "_report.html": one image's interactive page.
std::string report_suffix();

// "_pca.png": one image's PCA feature map (always PNG: the colours are the data).
std::string pca_suffix();

// "_words.csv": one image's words' relevance for each text (words_part.hpp).
std::string words_suffix();

// "_settings.txt": one job's record of the settings that made its outputs (job_record.hpp).
std::string settings_suffix();

// "_frames": a video's folder of frame overlays (--frames-dir), beside its other outputs.
std::string frames_suffix();

// "pca_fit.npy": a batch's PCA fit (--pca-fit batch), in the output folder itself (pca_fit.hpp).
const char* pca_fit_name();

// "index.html": a batch's gallery of report pages, in the output folder itself.
std::string report_index_name();

// "predictions.csv": a batch's most likely classes per image, in the output folder itself.
std::string predictions_name();

// `vitattn eval`'s files in its output folder (eval_job.hpp): "eval.csv", the metrics over the
// set; "eval_images.csv", each image's; "eval_curves.csv", the perturbation and sanity curves.
std::string eval_summary_name();
std::string eval_images_name();
std::string eval_curves_name();
std::string eval_page_name();  // "eval.html": the three as one offline page

// "_eval.csv": one image's measurements for `vitattn eval` (eval_part.hpp), which its CSVs are
// gathered from.
std::string eval_part_suffix();

// "<stem>.png": the object mask `vitattn eval` reads for `input` in its masks folder.
std::string eval_mask_name(const std::filesystem::path& input);

// The name `vitattn eval` gives its random baseline among the methods' maps: "random".
std::string random_baseline_name();

// "_attn.png" (or the format's extension): the overlay, or the sheet of heads with --head all.
// A video's, "_attn.mp4" (or .avi), is overlay_suffix(video_extension).
std::string overlay_suffix(const std::string& image_extension = default_image_extension());

// "_attn_h<h>.png" (or the format's extension): one head's overlay with --head all.
std::string head_overlay_suffix(int head, const std::string& image_extension = default_image_extension());

// One map's tag among several, what its file names carry after "_attn" and "_cls": "_<method>"
// when the job draws several methods (empty `method` otherwise), then "_c<class>" when a
// class-specific method draws several classes (nullopt otherwise), "_t<i>" for the i-th of
// several texts: "_chefer", "_c5", "_legrad_c5", "_t0", "_chefer_t1".
std::string map_tag(const std::string& method, std::optional<int> class_index,
                    ClassSource source = ClassSource::classifier);

// A head's tag with --head all: "_h<h>".
std::string head_tag(int head);

// "_attn<tag>.png" (or the format's extension): one map's overlay among several.
std::string map_overlay_suffix(const std::string& tag,
                               const std::string& image_extension = default_image_extension());

// "_cls<tag>.npy": one map's values among several, float32 [grid_h, grid_w]; with an empty
// tag "_cls.npy", the one map's (or, with --head all, the heads' maps stacked).
std::string map_values_suffix(const std::string& tag);

// "_pixels<tag>.npy": a map's values at the model's input pixels, float32 [S_h, S_w] (lrp's), tagged
// as map_values_suffix.
std::string pixel_values_suffix(const std::string& tag);

// "_attn.npy": the drawn layer's attention (--save-attention).
std::string attention_values_suffix();

// "_mask.npy": the maps' masks (--save-attention with --threshold).
std::string mask_suffix();

// "_<what>.npy": one array of the forward command's ("_attention.npy", "_features.npy", …).
std::string array_suffix(const std::string& what);

// "text_<what>.npy": one array of the forward command's texts, one file for all of them
// ("text_ids.npy", "text_embedding.npy", "text_attention.npy").
std::string text_array_name(const std::string& what);

// "text_labels.txt": the forward command's class labels, one a line, naming text_embedding.npy's rows.
std::string text_labels_name();

// A file in the output folder over the whole batch, rebuilt from one part per image job that
// the job writes beside its other outputs (batch_files.hpp says why and when).
enum class BatchFileKind {
  csv,      // `header`, then every part's rows (each part is `header` and its image's rows)
  gallery,  // a page linking every part (the report pages), report::write_report_index
};
struct BatchFile {
  const char* name;         // in the output folder: "predictions.csv"
  const char* part_suffix;  // each image's part: <output base> + "_predictions.csv"
  bool OutputSet::*on;      // the OutputSet field that turns it (and its parts) on
  BatchFileKind kind;
  const char* header;       // csv: the first line of the file and of every part, without "\n"
  std::size_t min_images;   // written for a batch of at least this many images
  const char* role;         // what the output guard calls it ("the predictions file")
  std::optional<files::FileKind> replaces_only;  // an existing file it may replace (a page vitattn wrote), or any
};

// Every batch file, in the order they are written: predictions.csv (--top), faithfulness.csv
// (--faithfulness), heads.csv (--heads-csv, --save-attention), index.html (--report).
const std::vector<BatchFile>& batch_files();

// The row of batch_files() that `on` turns on (&OutputSet::top: predictions.csv).
const BatchFile& batch_file(bool OutputSet::*on);

// The suffixes a job writes after its output base: the overlay "_attn.png" (.jpg, .webp) first,
// the settings record "_settings.txt" (with `settings`) last. An eval job's (OutputSet::eval):
// the maps' values with save_attention, then "_eval.csv", then the record. The record is written after all
// the others, and the overlay after all the others but the record: when the record is there,
// so is the rest.
std::vector<std::string> output_suffixes(const OutputSet& outputs);

// A video job's suffixes: the attention video "_attn.mp4" (or .avi) first, then with
// save_attention "_cls.npy", the per-frame maps, with top "_predictions.csv", the classes frame
// by frame (a "frame" column: no part of predictions.csv, which lists images), and the settings
// record last. (--frames-dir's PNGs go to a folder beside them and are not counted:
// --skip-existing looks at the video.)
std::vector<std::string> video_output_suffixes(const OutputSet& outputs);

// output_base + every suffix (a video job's when `video`).
std::vector<std::filesystem::path> output_paths(const std::filesystem::path& output_base, const OutputSet& outputs,
                                                bool video = false);

// What an existing file at a job's output path must be for the output to replace it: a report
// page ("_report.html") replaces only a page vitattn wrote (a page of someone else's may well
// have that name); nothing for the other outputs, which replace a file of their name (an
// earlier run's).
std::optional<files::FileKind> replaces_only(const std::filesystem::path& output);

// True when the file name is one that some vitattn run writes ("x_attn.png", "x_attn.jpg",
// "x_attn_h3.png", "x_cls.npy", …), whatever its options.
bool is_output_name(const std::filesystem::path& file);

}  // namespace vitattn::pipeline
