#pragma once
// An upload's body as it arrives, within the upload cap and the request's deadline. In the
// server the chunks come from cpp-httplib's ContentReader (server.cpp); here they come from any
// function that hands them over, so that the limits are tested without a socket.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace vitattn::serve {

// Takes a chunk of the body; false: stop reading.
using ChunkSink = std::function<bool(const char* data, std::size_t size)>;
// Hands the body's chunks to the sink, in order; false when the body was cut short or the sink stopped it.
using ChunkSource = std::function<bool(const ChunkSink& sink)>;

// Appends the body to `body`, up to `max` bytes (over_upload_limit, access.hpp: exactly `max`
// is taken) and until `deadline`: a client that sends it a byte at a time is cut off when the
// deadline passes (each read has its own timeout too). 0 when read whole, else the status to
// refuse it with: 413 over the cap (the chunk that would cross it is not kept), 408 past the
// deadline, 400 cut short (the connection ended or a read timed out).
int read_body(const ChunkSource& source, std::uint64_t max, std::chrono::steady_clock::time_point deadline,
              std::vector<std::uint8_t>& body);

}  // namespace vitattn::serve
