#include "app.hpp"

int main(int argc, char** argv) { return vitattn::cli::run(argc, argv); }
