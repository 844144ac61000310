#include "app.hpp"
#include "memory_reuse.hpp"

int main(int argc, char** argv) {
  vitattn::cli::reuse_freed_memory();
  return vitattn::cli::run(argc, argv);
}
