#pragma once
// The part of the zip format that torch.save writes (PyTorchStreamWriter): every entry
// stored uncompressed, found through the central directory (zip64 when the file or an entry
// passes 4 GiB). Entries are read in place, as views into the one buffer that holds the file.
//
// Hand-written rather than libzip: libzip hands out entry data only by copying it out through
// zip_fread and does not expose where an entry's data sits, so it can neither give a view into
// the buffer nor let us refuse overlapping entries; torch's files need nothing it adds.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace vitattn::tensors {

struct ZipEntry {
  std::string name;
  std::span<const std::uint8_t> data;  // the stored bytes, inside the archive's buffer
};

// Reads the central directory of `bytes` and checks each entry against its local header.
// Throws Error "SOURCE: …" for anything but a well-formed archive of stored entries: no end
// record (not a zip, or truncated), compressed or encrypted entries, entries out of the file
// or overlapping one another, zip64 fields missing or out of range, duplicate names.
std::vector<ZipEntry> read_zip(std::span<const std::uint8_t> bytes, const std::string& source);

}  // namespace vitattn::tensors
