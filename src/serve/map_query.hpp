#pragma once
// A map request's query parameters (`model=0&layer=-1&head=mean&method=attention&class=3&
// format=png`) → a typed MapQuery: the only request parsing the server writes itself (the
// HTTP framing is cpp-httplib's). Each parameter optional, with the command line's meanings
// and defaults: layer −1 (the last; negative counts from the end), head the mean of the heads
// (the CLI's syntax, pipeline::parse_head: "3", "mean", "max", "min", "all"), method attention
// (rollout, chefer, grad-rollout, legrad, gradcam), class the most likely (the CLI's syntax, an
// index or a label: pipeline/class_choice.hpp), format npy (or png: the overlay). Whether the
// values fit the model (a layer or head it has, a class it knows, one map) is map_options'
// (map_job.hpp), not this file's.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/view.hpp"

namespace vitattn::serve {

enum class MapFormat { npy, png };

// Which endpoint's query: a map's (POST /api/map: `format`) or a report's (POST /api/report:
// `name`, the upload's file name, which the page shows as its title and the download is named by;
// `top`, how many of the most likely classes the page holds maps of; `pca`, 0 or 1).
enum class QueryKind { map, report };

struct MapQuery {
  std::size_t model = 0;  // index into the server's models, in the order given
  int layer = -1;
  pipeline::HeadChoice head = pipeline::HeadChoice::fuse;
  int head_index = 0;     // with HeadChoice::index
  HeadFusion fusion = HeadFusion::mean;
  pipeline::MapMethod method = pipeline::MapMethod::attention;
  bool method_given = false;  // method= was in the query (with texts and none: pipeline::kTextsMethod)
  std::optional<std::string> classes;  // as given: resolved against the model by map_options
  MapFormat format = MapFormat::npy;
  std::string name = "upload";  // QueryKind::report: 1…255 bytes, no control character, '/' or '\\'
  std::optional<int> top;       // QueryKind::report: the classes the page holds maps of (the CLI's --top; none: 3)
  bool pca = false;             // QueryKind::report: the PCA picture in the Tokens panel (the CLI's --pca)
  // QueryKind::report, `text`: prompts, one per line (a model with a text tower: they become its
  // classes, as the CLI's --text; each checked by the CLI's rules when the page is made), and
  // `truncate` 0 or 1 (the CLI's --truncate).
  std::vector<std::string> texts;
  bool truncate = false;
};

// The parameters as cpp-httplib decoded them (name → value; a repeated name: the first).
// `token` is no map parameter and is passed over. Throws Error with a one-line message
// naming the parameter for an unknown parameter (`format` is the map's only, `name`, `top`,
// `pca`, `text` and `truncate` the report's), a text with a control character but the line
// breaks and tabs or over 64 KiB, a repeated parameter, or a value out of its form (not a decimal integer in range, not
// one of the names, a name or class with a control character, a name with a path separator).
MapQuery parse_map_query(const std::multimap<std::string, std::string>& params, QueryKind kind = QueryKind::map);

// A key naming every field of the query that changes a report page (model, layer, head,
// method, class, name, top, pca, texts, truncate), one line: two queries with the same key make the same page of an image.
std::string report_key(const MapQuery& query);

}  // namespace vitattn::serve
