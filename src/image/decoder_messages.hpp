#pragma once
// What the image libraries say while decoding, kept for the file being decoded instead of
// printed on stderr, so that vitattn can report it as its own line naming that file.
#include <string>
#include <vector>

namespace vitattn::image {

// While one is alive, what libjpeg, libpng and OpenCV's logger say on this thread is added
// to lines() ("libjpeg: Corrupt JPEG data: …", "libpng error: …", "OpenCV: …"), never to
// stderr. Decodes on other threads never mix in: each thread has its own. Scopes do not nest.
class DecoderMessages {
 public:
  DecoderMessages();
  ~DecoderMessages();
  DecoderMessages(const DecoderMessages&) = delete;
  DecoderMessages& operator=(const DecoderMessages&) = delete;

  const std::vector<std::string>& lines() const { return lines_; }
  void add(std::string line) { lines_.push_back(std::move(line)); }

 private:
  std::vector<std::string> lines_;
};

}  // namespace vitattn::image
