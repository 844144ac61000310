// data/clip/bpe_simple_vocab_16e6.txt.gz in the library's read-only data, between the two
// symbols clip_merges.cpp reads. VITATTN_CLIP_MERGES_GZ is its path (src/text/CMakeLists.txt).
__asm__(
    ".pushsection .rodata\n"
    ".global vitattn_clip_merges_gz\n"
    ".type vitattn_clip_merges_gz, @object\n"
    "vitattn_clip_merges_gz:\n"
    ".incbin \"" VITATTN_CLIP_MERGES_GZ "\"\n"
    ".global vitattn_clip_merges_gz_end\n"
    ".type vitattn_clip_merges_gz_end, @object\n"
    "vitattn_clip_merges_gz_end:\n"
    ".byte 0\n"
    ".popsection\n");
