#include "model/layout_check.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "core/error.hpp"
#include "files/file_io.hpp"

namespace vitattn::model {
namespace {

// "a, b, c and 4 more": a whole block missing names its prefix in the gap message instead.
std::string name_list(const std::vector<std::string>& names) {
  constexpr std::size_t kShown = 8;
  std::string s;
  for (std::size_t i = 0; i < names.size() && i < kShown; ++i) s += (i ? ", " : "") + files::printable(names[i]);
  if (names.size() > kShown) s += " and " + std::to_string(names.size() - kShown) + " more";
  return s;
}

std::vector<std::string> norm_names(const std::string& stem) {
  if (stem.empty()) return {};
  return {stem + ".weight", stem + ".bias"};
}

std::vector<std::string> linear_names(const std::string& stem) {
  if (stem.empty()) return {};
  return {weight_of(stem), bias_of(stem)};
}

// The classifier's and the joint-embedding projection's names, which a family reads under its
// prefix or at the top of the file.
std::vector<std::string> top_role_names(const CheckpointFamily& f) {
  std::vector<std::string> names = linear_names(f.head);
  for (const std::string& name : linear_names(f.head_dist)) names.push_back(name);
  if (!f.embed.empty()) names.push_back(f.embed);
  return names;
}

// Every tensor a family reads outside its blocks, relative to its prefix: the patch embedding,
// the leading tokens and positions, the norms around the blocks, the heads.
std::vector<std::string> role_names(const CheckpointFamily& f) {
  std::vector<std::string> names = linear_names(f.patch_embed);
  for (const std::string& one : {f.cls_token, f.pos_embed, f.dist_token, f.rope_periods})
    if (!one.empty()) names.push_back(one);
  for (const std::string& r : f.registers) names.push_back(r);
  for (const std::string& norm : {f.norm_pre, f.final_norm, f.fc_norm})
    for (const std::string& name : norm_names(norm)) names.push_back(name);
  for (const std::string& name : top_role_names(f)) names.push_back(name);
  if (!f.probe_head.empty()) {
    const std::string h = f.probe_head + ".";
    names.push_back(h + "probe");
    for (const char* part : {"attention.in_proj_", "attention.out_proj", "layernorm", "mlp.fc1", "mlp.fc2"})
      for (const std::string& name : linear_names(h + part)) names.push_back(name);
  }
  return names;
}

class LayoutCheck {
 public:
  LayoutCheck(const tensors::TensorFile& st, const CheckpointFamily& f, const std::string& prefix)
      : st_(st), f_(f), prefix_(prefix) {}

  Layout run() {
    Layout out;
    const std::vector<int> blocks = block_numbers();
    out.n_blocks = blocks.empty() ? 0 : blocks.back() + 1;
    refuse_gaps(blocks);
    refuse_unsupported();
    linear(prefix_ + f_.patch_embed, false);  // some releases (CLIP's) have no patch bias
    if (!f_.cls_token.empty()) need(prefix_ + f_.cls_token);
    if (!f_.pos_embed.empty()) need(prefix_ + f_.pos_embed);
    if (!f_.dist_token.empty()) need(prefix_ + f_.dist_token);
    if (!f_.rope_periods.empty()) take(prefix_ + f_.rope_periods);
    for (const auto& name : f_.unread) take(prefix_ + name);
    for (const auto& name : f_.registers) take(prefix_ + name);
    for (const auto& name : f_.ignored) take(prefix_ + name);
    pre_block_norm();
    for (int i = 0; i < out.n_blocks; ++i) block(i);
    same_in_every_block(out.n_blocks);
    final_norms();
    classifier();
    embedding_projection();
    probe_head();
    std::vector<std::string> unused, foreign;
    const std::set<std::string> others = read_by_any_family();
    for (const auto& entry : st_.tensors()) {
      if (used_.contains(entry.first)) continue;
      if (in_encoder_names(entry.first)) unused.push_back(entry.first);
      else if (others.contains(entry.first)) foreign.push_back(entry.first);
      else out.outside.push_back(entry.first);
    }
    refuse(unused, foreign);
    return out;
  }

 private:
  bool has(const std::string& name) const { return st_.find(name) != nullptr; }
  void need(const std::string& name) {
    if (has(name)) used_.insert(name);
    else if (std::find(missing_.begin(), missing_.end(), name) == missing_.end()) missing_.push_back(name);
  }
  void take(const std::string& name) {
    if (has(name)) used_.insert(name);
  }
  void norm(const std::string& stem) {
    need(stem + ".weight");
    need(stem + ".bias");
  }
  void linear(const std::string& stem, bool biased) {
    need(weight_of(stem));
    biased ? need(bias_of(stem)) : take(bias_of(stem));
  }

  bool numbered() const { return f_.block.find("{i}") != std::string::npos; }
  // "blocks." of "blocks.{i}.", with the prefix; the whole block name for a family of one block.
  std::string block_stem() const { return prefix_ + f_.block.substr(0, f_.block.find("{i}")); }
  std::string block_prefix(int i) const {
    if (!numbered()) return prefix_ + f_.block;
    return block_stem() + std::to_string(i) + f_.block.substr(f_.block.find("{i}") + 3);
  }

  // The block numbers the file's names hold, ascending: "blocks.7.norm1.weight" → 7.
  std::vector<int> block_numbers() const {
    if (!numbered()) return {0};
    const std::string stem = block_stem(), after = f_.block.substr(f_.block.find("{i}") + 3);
    std::set<int> found;
    for (const auto& entry : st_.tensors()) {
      const std::string& name = entry.first;
      if (!name.starts_with(stem)) continue;
      std::size_t end = stem.size();
      while (end < name.size() && end - stem.size() < 7 && name[end] >= '0' && name[end] <= '9') ++end;
      const std::string digits = name.substr(stem.size(), end - stem.size());
      if (digits.empty() || (digits.size() > 1 && digits[0] == '0') || name.compare(end, after.size(), after) != 0)
        continue;  // not a block's name: left for the unused names
      found.insert(std::stoi(digits));
    }
    return {found.begin(), found.end()};
  }

  void refuse_gaps(const std::vector<int>& blocks) const {
    std::vector<std::string> gaps;
    for (int i = 0, k = 0; i < (blocks.empty() ? 0 : blocks.back()); ++i) {
      if (blocks[static_cast<std::size_t>(k)] == i) ++k;
      else gaps.push_back(block_prefix(i) + "*");
    }
    if (gaps.empty()) return;
    throw Error(st_.source() + ": a " + f_.name + " model's blocks are numbered without a gap, and this file has no " +
                name_list(gaps) + " (its blocks go up to " + block_prefix(blocks.back()) + "*)");
  }

  // A variant of the family vitattn does not compute: said at once, before any name is missed.
  void refuse_unsupported() const {
    for (const auto& name : f_.unsupported)
      if (has(prefix_ + name))
        throw Error(st_.source() + ": holds " + files::printable(prefix_ + name) + ": " + f_.unsupported_why);
  }

  // Parts some models of a family lack (a qkv bias, layer scale): counted per block, then
  // required in every block once one block has them.
  void optional_part(int i, const std::string& relative) {
    if (!has(block_prefix(i) + relative)) return;
    take(block_prefix(i) + relative);
    ++optional_[relative];
  }
  void same_in_every_block(int n_blocks) {
    for (const auto& [relative, count] : optional_)
      if (count < n_blocks)
        for (int i = 0; i < n_blocks; ++i) need(block_prefix(i) + relative);
  }

  void block(int i) {
    const BlockNaming& n = f_.block_naming;
    const std::string bp = block_prefix(i);
    if (!n.norm1.empty()) norm(bp + n.norm1);
    if (!f_.key_bias && n.qkv.size() == 3) {  // q and v biased together; the key's bias optional
      biased_together(i, {n.qkv[0], n.qkv[2]});
      need(bp + weight_of(n.qkv[1]));
      take(bp + bias_of(n.qkv[1]));
    } else {
      biased_together(i, n.qkv);  // q, k and v each with a bias, or none of them
    }
    if (!f_.qkv_bias_mask.empty()) optional_part(i, f_.qkv_bias_mask);
    if (!n.ls1.empty()) optional_part(i, n.ls1);
    if (!n.fc1.empty()) norm(bp + n.norm2);
    std::string fc1 = n.fc1, fc2 = n.fc2;  // an older release's names when the current ones are absent
    if (n.fc_alt.size() == 2 && !has(bp + weight_of(fc1)) && !has(bp + bias_of(fc1)) &&
        (has(bp + weight_of(n.fc_alt[0])) || has(bp + bias_of(n.fc_alt[0]))))
      fc1 = n.fc_alt[0], fc2 = n.fc_alt[1];
    std::vector<std::string> linears;  // the projection and the MLP: trained with biases, or all without
    for (const std::string& l : {n.proj, fc1, fc2})
      if (!l.empty()) linears.push_back(l);
    biased_together(i, linears);
    if (!n.ls2.empty()) optional_part(i, n.ls2);
  }

  // The block's `linears`, each weight required; their biases (in a family with biases) all
  // there or none, and the same in every block. Without biases (the single-head layout) each
  // bias is optional.
  void biased_together(int i, const std::vector<std::string>& linears) {
    const std::string bp = block_prefix(i);
    const bool any = std::any_of(linears.begin(), linears.end(), [&](const std::string& l) { return has(bp + bias_of(l)); });
    for (const auto& l : linears) {
      need(bp + weight_of(l));
      if (!f_.biases) take(bp + bias_of(l));
      else if (any) need(bp + bias_of(l));
      if (f_.biases) optional_part(i, bias_of(l));
    }
  }

  bool has_norm(const std::string& stem) const { return has(stem + ".weight") || has(stem + ".bias"); }

  // The norm before the first block: whole where the family has one in every model (CLIP's
  // ln_pre), whole or absent where only some have it (timm's norm_pre).
  void pre_block_norm() {
    if (f_.norm_pre.empty()) return;
    if (!f_.norm_pre_optional || has_norm(prefix_ + f_.norm_pre)) norm(prefix_ + f_.norm_pre);
  }

  // The final norm, whole; with fc_norm (timm's global_pool='avg', whose final norm is an
  // Identity) fc_norm whole and the final norm optional.
  void final_norms() {
    const bool pooled = !f_.fc_norm.empty() && has_norm(prefix_ + f_.fc_norm);
    if (pooled) norm(prefix_ + f_.fc_norm);
    if (!f_.final_norm.empty() && (!pooled || has_norm(prefix_ + f_.final_norm))) norm(prefix_ + f_.final_norm);
  }

  // Optional, but whole; outside the backbone prefix in Hugging Face files ("classifier.*").
  // A distilled model's two heads come together.
  void classifier() {
    if (f_.head.empty()) return;
    for (const std::string& hp : {prefix_, std::string()})
      if (has(weight_of(hp + f_.head)) || has(bias_of(hp + f_.head))) {
        linear(hp + f_.head, f_.biases);
        if (!f_.head_dist.empty()) linear(hp + f_.head_dist, f_.biases);
        return;
      }
    if (!f_.head_dist.empty() && (has(weight_of(prefix_ + f_.head_dist)) || has(bias_of(prefix_ + f_.head_dist))))
      need(weight_of(prefix_ + f_.head));  // a distillation head alone: the class token's is missing
  }

  // CLIP's projection to the joint embedding: optional (CLIPVisionModel has none), bias-free;
  // under the prefix or at the top, like the classifier.
  void embedding_projection() {
    if (f_.embed.empty()) return;
    for (const std::string& ep : {prefix_, std::string()})
      if (has(ep + f_.embed)) return take(ep + f_.embed);
  }

  // SigLIP's attention-pooling head, whole (checkpoint_families.hpp probe_head).
  void probe_head() {
    if (f_.probe_head.empty()) return;
    const std::string h = prefix_ + f_.probe_head + ".";
    need(h + "probe");
    need(h + "attention.in_proj_weight");
    need(h + "attention.in_proj_bias");
    linear(h + "attention.out_proj", true);
    norm(h + "layernorm");
    linear(h + "mlp.fc1", true);
    linear(h + "mlp.fc2", true);
  }

  // The encoder's own names: the blocks', the patch embedding's module ("patch_embed." of
  // "patch_embed.proj": a norm there is the encoder's too) and the final norm's.
  bool in_encoder_names(const std::string& name) const {
    const std::size_t dot = f_.patch_embed.rfind('.');
    const std::string patch_module = dot == std::string::npos ? f_.patch_embed + "." : f_.patch_embed.substr(0, dot + 1);
    std::vector<std::string> spaces{prefix_ + patch_module};
    if (numbered()) spaces.push_back(block_stem());
    else
      for (const auto& q : f_.block_naming.qkv) spaces.push_back(block_prefix(0) + q.substr(0, q.find('.') + 1));
    if (!f_.final_norm.empty()) spaces.push_back(prefix_ + f_.final_norm + ".");
    if (!f_.probe_head.empty()) spaces.push_back(prefix_ + f_.probe_head + ".");
    return std::any_of(spaces.begin(), spaces.end(), [&](const std::string& s) { return name.starts_with(s); });
  }

  // What any family reads outside its blocks (role_names), under this prefix, and a classifier
  // or a projection also at the top, where Hugging Face keeps them. A file holding one that this
  // family does not read was made for another family (its positions, its classifier, its tokens),
  // and read as this one it would draw without them; a family's own names are used_ by then.
  std::set<std::string> read_by_any_family() const {
    std::set<std::string> names;
    for (const CheckpointFamily& other : checkpoint_families()) {
      for (const std::string& name : role_names(other)) names.insert(prefix_ + name);
      if (!prefix_.empty())
        for (const std::string& name : top_role_names(other)) names.insert(name);
    }
    return names;
  }

  void refuse(const std::vector<std::string>& unused, const std::vector<std::string>& foreign) const {
    if (missing_.empty() && unused.empty() && foreign.empty()) return;
    std::vector<std::string> parts;
    if (!missing_.empty()) parts.push_back("missing " + name_list(missing_));
    if (!unused.empty())
      parts.push_back("not of the " + f_.name + " layout (misnamed, or from another model?): " + name_list(unused));
    if (!foreign.empty())
      parts.push_back("it holds " + name_list(foreign) + ", which other families read and a " + f_.name +
                      " model does not (a file of another family?)");
    std::string what = st_.source() + ": not a " + (missing_.empty() && unused.empty() ? "" : "complete ") + f_.name +
                       " model:";
    for (std::size_t i = 0; i < parts.size(); ++i) what += (i ? "; " : " ") + parts[i];
    throw Error(what);
  }

  const tensors::TensorFile& st_;
  const CheckpointFamily& f_;
  const std::string prefix_;
  std::set<std::string> used_;
  std::vector<std::string> missing_;  // in the order found
  std::map<std::string, int> optional_;
};

}  // namespace

Layout check_layout(const tensors::TensorFile& st, const CheckpointFamily& f, const std::string& prefix) {
  return LayoutCheck(st, f, prefix).run();
}

}  // namespace vitattn::model
