# ASan + UBSan for every target when VITATTN_SANITIZE is on (the asan preset).
if(VITATTN_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
