#pragma once
namespace vitattn::cli {

// The whole command: parse, then explain or process images. Returns the exit status
// (0 all done, 1 some inputs failed, 2 usage or model error).
int run(int argc, char** argv);

}  // namespace vitattn::cli
