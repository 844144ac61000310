#include "forward_options.hpp"

#include <algorithm>

namespace vitattn::cli {
namespace {

// --method's choices: each class-specific method by its name (pipeline/map_methods.hpp), and all.
std::vector<std::string> method_list() {
  std::vector<std::string> out;
  for (const pipeline::MapMethodRow& r : pipeline::map_method_rows())
    if (r.class_specific) out.emplace_back(r.name);
  out.emplace_back("all");
  return out;
}

// --class: each value indices or labels, never empty.
const CLI::Validator kClassValue([](std::string& s) -> std::string { return s.empty() ? "empty class" : std::string(); },
                                 "", "class");

// --class, --method, --discard-ratio, --legrad-from, the γs: the backward pass of one class's logit.
void add_gradient_options(CLI::App& forward, ForwardCommandOptions& o) {
  const std::string group = "Gradients (models with a classifier)";
  CLI::Option* cls =
      forward
          .add_option("--class", o.classes,
                      "Class c: also write ∂y_c/∂A_l of every layer (<stem>_grad_attention.npy [N, L, H, T, T]) and "
                      "∂y_c/∂(block l's input) (<stem>_grad_blocks.npy [N, L, T, D]); y_c is the logit, before the "
                      "softmax. By index or label, a comma list for several (each class's files then end in _c<C>), "
                      "as the image command's --class takes them (see vitattn --help)")
          ->expected(1)
          ->allow_extra_args(false)  // one word a time: `--class 3 x.npy` leaves the tensor an input
          ->take_all()               // --class 3 --class 5 is --class 3,5
          ->check(kClassValue)
          ->type_name("C[,C...]")
          ->group(group);
  CLI::Option* method =
      forward
          .add_option("--method", o.methods,
                      "Comma list of class-specific maps of class c, each written as <stem>_relevance_<method>.npy "
                      "[N, grid_h, grid_w] before any display scaling (the README defines each); all: every one")
          ->allow_extra_args(false)  // one list per --method: the inputs after it are not methods
          ->delimiter(',')
          ->transform(CLI::IsMember(method_list(), CLI::ignore_case))  // "foo not in {chefer, …}"; the name's own case
          ->type_name("LIST")
          ->needs(cls)
          ->group(group);
  forward.add_option("--discard-ratio", o.discard_ratio, "grad-rollout: drop this fraction of the weakest links per layer")
      ->capture_default_str()
      ->check(finite_in(0.0, 0.99))
      ->needs(method)
      ->group(group);
  CLI::Option* legrad_from =
      forward.add_option("--legrad-from", o.legrad_from, "legrad: the first layer summed (negative counts from the end)")
          ->capture_default_str()
          ->check(CLI::Range(-4096, 4095))
          ->needs(method)
          ->group(group);
  forward.add_option("--first-layer", o.first_layer,
                     "chefer and legrad: the first layer (negative counts from the end); default: legrad -2, chefer 0 "
                     "(every layer), with --text -1 (the last, as the authors' CLIP notebook)")
      ->check(CLI::Range(-4096, 4095))
      ->needs(method)
      ->excludes(legrad_from)
      ->group(group);
  for (CLI::Option* gamma : add_lrp_gamma_options(forward, o.lrp_gamma_linear, o.lrp_gamma_conv, group))
    gamma->needs(method);
}

}  // namespace

CLI::App* add_forward_command(CLI::App& app, ForwardCommandOptions& o, int& verbosity) {
  CLI::App* forward = app.add_subcommand(
      "forward",
      "Run a checkpoint's encoder on preprocessed tensors (.npy, float32/64, [3, H, W] or [N, 3, H, W]) and write\n"
      "<out>/<stem>_attention.npy [N, L, H, T, T], <stem>_features.npy [N, D] (class token after the final\n"
      "norm), <stem>_tokens.npy [N, T, D] (every token after the final norm), <stem>_norms.npy [N, L, T] (the\n"
      "L2 norm of every token after each block) and <stem>_logits.npy [N, C] when the model has a classifier.\n"
      "With --class c, also the gradients of the logit y_c from a backward pass: <stem>_grad_attention.npy\n"
      "[N, L, H, T, T] (∂y_c/∂A_l, A_l layer l's attention probabilities) and <stem>_grad_blocks.npy\n"
      "[N, L, T, D] (∂y_c/∂ the input of block l); with --method, <stem>_relevance_<method>.npy\n"
      "[N, grid_h, grid_w] for each. Takes --model, -o and the Checkpoints options; for checking against\n"
      "other implementations (PyTorch autograd).");
  forward->footer(
      "Examples:\n"
      "  vitattn forward --model m.safetensors x.npy        vitattn-out/x_attention.npy, x_features.npy, …\n"
      "  vitattn forward --model dino.pth --key teacher --heads 6 a.npy b.npy -o out\n"
      "  vitattn forward --model vit.safetensors --class 3 --method chefer,legrad x.npy\n"
      "                                                  also x_grad_attention.npy, x_grad_blocks.npy,\n"
      "                                                  x_relevance_chefer.npy, x_relevance_legrad.npy\n"
      "  vitattn forward --model clip.safetensors --text 'a cat' --text 'a dog' x.npy\n"
      "                                                  text_ids.npy, text_embedding.npy, text_attention.npy,\n"
      "                                                  x_logits.npy [N, 2] beside x's own files\n"
      "  vitattn forward --model clip.safetensors --labels imagenet x.npy\n"
      "                                                  text_embedding.npy [1000, E], text_labels.txt,\n"
      "                                                  x_logits.npy [N, 1000]\n"
      "Exit status: 0 all tensors done; 1 some failed (the others are written); 2 usage or model error\n"
      "(--class on a model without a classifier or out of its range among them; --text or --labels on a\n"
      "model without a text tower, an empty text, a text over the context without --truncate, a SigLIP\n"
      "model without the spiece.model beside its weights, a bad labels or templates file).");
  forward->add_option("tensors", o.tensors, "Input tensors (.npy); none needed with --text or --labels")
      ->type_name("FILE.npy...")
      ->check(readable_file());
  forward->add_option("-o,--output", o.output, "Output folder")->capture_default_str()->type_name("DIR")->check(non_empty());
  forward->add_option("--threads", o.threads, "Threads of the matrix products (default: every core); the outputs' bytes "
                                              "are the same whatever the count")
      ->check(CLI::Range(1, 1024));
  CLI::Option* model = add_model_file_option(*forward, o.model);
  add_precision_option(*forward, o.precision);
  forward->add_flag("--no-scale", o.no_scale, "Drop the 1/√d_k scaling, to see why it is there")->group("Model");
  add_checkpoint_options(*forward, o.model, model);
  add_gradient_options(*forward, o);
  CLI::Option* text =
      forward
          ->add_option("--text", o.texts,
                       "A text through a CLIP or SigLIP model's text tower (repeat for several): writes\n"
                       "<out>/text_ids.npy int32 [n, ctx] (CLIP: clip.tokenize's ids, ctx 77; SigLIP: its\n"
                       "spiece.model's, padded to 64), text_embedding.npy [n, E] (L2-normalised) and\n"
                       "text_attention.npy [n, L, H, ctx, ctx] (CLIP: causal, zeros after each text's end token;\n"
                       "SigLIP: full), and with tensors, each <stem>_logits.npy [N, n] = exp(logit_scale)·cos(image,\n"
                       "text embedding) (+ logit_bias for SigLIP) and <stem>_probs.npy [N, n] (CLIP: softmax over\n"
                       "the texts; SigLIP: sigmoid of each logit)")
          ->allow_extra_args(false)  // one text per --text: the tensors after it stay inputs
          ->type_name("TEXT")
          ->group("Text (CLIP, SigLIP)");
  forward
      ->add_flag("--truncate", o.truncate,
                 "Cut a text over the context to its first ctx - 1 tokens and the end token (as clip.tokenize's\n"
                 "truncate=True and SigLIP's processor's truncation do) instead of refusing it")
      ->needs(text)
      ->group("Text (CLIP, SigLIP)");
  add_class_list_options(*forward, o.classes_from_words, "Text (CLIP, SigLIP)");
  add_verbosity_options(*forward, verbosity);
  return forward;
}

void check_forward(const CLI::App& forward) {
  if (forward.count("--model") == 0) throw CLI::ValidationError("forward requires --model");
  if (forward.count("tensors") == 0 && forward.count("--text") == 0 && forward.count("--labels") == 0)
    throw CLI::ValidationError("forward requires input tensors (.npy), --text or --labels");
}

std::vector<pipeline::MapMethod> chosen_relevance_methods(const std::vector<std::string>& names) {
  std::vector<pipeline::MapMethod> methods;
  for (const std::string& name : names)
    for (pipeline::MapMethod m : pipeline::class_specific_methods())
      if ((name == "all" || name == pipeline::method_name(m)) &&  // each once: "chefer,chefer" writes one file
          std::find(methods.begin(), methods.end(), m) == methods.end())
        methods.push_back(m);
  return methods;
}

}  // namespace vitattn::cli
