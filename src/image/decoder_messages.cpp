#include "image/decoder_messages.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <regex>
#include <streambuf>
#include <utility>
// clang-format off
#include <jpeglib.h>  // after <cstdio>: it uses FILE
#include <png.h>
// clang-format on

// Why this way. OpenCV 4.6 sets up libjpeg and libpng with their default message handlers,
// which fprintf to stderr ("Corrupt JPEG data: …", "libpng error: …"), and it has no log
// callback (replaceWriteLogMessage came later); its own logger writes to std::cerr. Both
// libraries do take per-decoder callbacks, and OpenCV installs the defaults through
// jpeg_std_error and png_create_read_struct, which it calls through the dynamic linker. The
// executable's definitions below come first in that lookup: they call the libraries' own and
// add callbacks that hand each message to the DecoderMessages of the thread that is decoding.
// So a message lands with its file exactly, under any -j, with no lock around decoding. A
// redirect of fd 2 could not tell which of N concurrent decodes printed a line without
// serialising them all.

namespace vitattn::image {
namespace {

thread_local DecoderMessages* t_current = nullptr;

// Hands a line to this thread's scope; false when there is none (the caller then prints
// it as the library would have).
bool collect(std::string line) {
  if (!t_current) return false;
  t_current->add(std::move(line));
  return true;
}

void jpeg_output_message(j_common_ptr cinfo) {
  char text[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, text);
  if (!collect(std::string("libjpeg: ") + text)) std::fprintf(stderr, "%s\n", text);
}

void png_warning_message(png_structp, png_const_charp text) {
  if (!collect(std::string("libpng warning: ") + text)) std::fprintf(stderr, "libpng warning: %s\n", text);
}

[[noreturn]] void png_error_message(png_structp png, png_const_charp text) {
  if (!collect(std::string("libpng error: ") + text)) std::fprintf(stderr, "libpng error: %s\n", text);
  png_longjmp(png, 1);  // as libpng's default does after printing; OpenCV's setjmp catches it
}

// One line of OpenCV's, without what means nothing to a user: "[ WARN:0@0.012] global
// /build/…/loadsave.cpp (806) imdecode_ ", "imdecode_('/tmp/__opencv_temp.x'): ",
// "OpenCV(4.6.0) ./modules/…/bitstrm.cpp:102: error: (-2:Unspecified error) ".
std::string tidy_opencv_line(const std::string& line) {
  static const std::regex noise(
      R"(^\[[^\]]*\] (global \S+ \(\d+\) \S+ )?|imdecode_\('[^']*'\): |OpenCV\([^)]*\) \S+: error: \([^)]*\) )");
  return std::regex_replace(line, noise, "");
}

// std::cerr's buffer once OpenCV could log: whole lines go to the thread's scope, or, outside
// one, unchanged to the original buffer. Unbuffered, per-thread line assembly: no shared state
// but the original buffer, which a mutex guards.
class CerrLines final : public std::streambuf {
 public:
  explicit CerrLines(std::streambuf* original) : original_(original) {}

 protected:
  int overflow(int c) override {
    if (c == traits_type::eof()) return traits_type::not_eof(c);
    const char ch = static_cast<char>(c);
    append(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    append(s, n);
    return n;
  }
  int sync() override {
    if (!t_current && !pending().empty()) forward(std::exchange(pending(), {}), false);
    return 0;
  }

 private:
  static std::string& pending() {
    thread_local std::string line;
    return line;
  }
  void append(const char* s, std::streamsize n) {
    for (std::streamsize i = 0; i < n; ++i) {
      if (s[i] != '\n') {
        pending() += s[i];
        continue;
      }
      std::string line = std::exchange(pending(), {});
      if (t_current && line.empty()) continue;  // OpenCV's exception texts end with a line break
      if (!collect("OpenCV: " + tidy_opencv_line(line))) forward(line, true);
    }
  }
  void forward(const std::string& text, bool newline) {
    const std::lock_guard lock(mutex_);
    original_->sputn(text.data(), static_cast<std::streamsize>(text.size()));
    if (newline) original_->sputc('\n');
    original_->pubsync();
  }

  std::streambuf* original_;
  std::mutex mutex_;
};

void capture_opencv_log() {
  static std::once_flag once;
  // Never deleted: std::cerr is flushed at exit, after static objects are gone.
  std::call_once(once, [] { std::cerr.rdbuf(new CerrLines(std::cerr.rdbuf())); });
}

template <typename F>
F next_definition(const char* name) {
  void* f = ::dlsym(RTLD_NEXT, name);
  if (!f) {  // cannot happen while OpenCV links the library; never run without it
    std::fprintf(stderr, "error: %s not found in the loaded libraries\n", name);
    std::abort();
  }
  return reinterpret_cast<F>(f);
}

}  // namespace

DecoderMessages::DecoderMessages() {
  capture_opencv_log();
  t_current = this;
}

DecoderMessages::~DecoderMessages() { t_current = nullptr; }

}  // namespace vitattn::image

extern "C" {

jpeg_error_mgr* jpeg_std_error(jpeg_error_mgr* err) {
  static const auto real = vitattn::image::next_definition<jpeg_error_mgr* (*)(jpeg_error_mgr*)>("jpeg_std_error");
  jpeg_error_mgr* mgr = real(err);
  mgr->output_message = vitattn::image::jpeg_output_message;
  return mgr;
}

png_structp png_create_read_struct(png_const_charp user_png_ver, png_voidp error_ptr, png_error_ptr error_fn,
                                   png_error_ptr warn_fn) {
  using Create = png_structp (*)(png_const_charp, png_voidp, png_error_ptr, png_error_ptr);
  static const auto real = vitattn::image::next_definition<Create>("png_create_read_struct");
  return real(user_png_ver, error_ptr, error_fn ? error_fn : vitattn::image::png_error_message,
              warn_fn ? warn_fn : vitattn::image::png_warning_message);
}

}  // extern "C"
