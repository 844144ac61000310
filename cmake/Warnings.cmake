# An interface target that project targets link to get the warning set;
# third-party headers come in as SYSTEM includes so their warnings stay quiet.
add_library(vitattn_warnings INTERFACE)
target_compile_options(vitattn_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion
  -Wnon-virtual-dtor -Wold-style-cast -Wcast-align -Woverloaded-virtual
  -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
option(VITATTN_WERROR "Treat warnings as errors" OFF)
if(VITATTN_WERROR)
  target_compile_options(vitattn_warnings INTERFACE -Werror)
endif()
