// data/clip/imagenet_classes.txt and imagenet_templates.txt in the library's read-only data,
// each between two symbols class_prompts.cpp reads, as clip_merges_data.cpp embeds the merges.
// VITATTN_CLIP_IMAGENET_CLASSES and VITATTN_CLIP_IMAGENET_TEMPLATES are their paths
// (src/text/CMakeLists.txt).
__asm__(
    ".pushsection .rodata\n"
    ".global vitattn_clip_imagenet_classes\n"
    ".type vitattn_clip_imagenet_classes, @object\n"
    "vitattn_clip_imagenet_classes:\n"
    ".incbin \"" VITATTN_CLIP_IMAGENET_CLASSES "\"\n"
    ".global vitattn_clip_imagenet_classes_end\n"
    ".type vitattn_clip_imagenet_classes_end, @object\n"
    "vitattn_clip_imagenet_classes_end:\n"
    ".byte 0\n"
    ".global vitattn_clip_imagenet_templates\n"
    ".type vitattn_clip_imagenet_templates, @object\n"
    "vitattn_clip_imagenet_templates:\n"
    ".incbin \"" VITATTN_CLIP_IMAGENET_TEMPLATES "\"\n"
    ".global vitattn_clip_imagenet_templates_end\n"
    ".type vitattn_clip_imagenet_templates_end, @object\n"
    "vitattn_clip_imagenet_templates_end:\n"
    ".byte 0\n"
    ".popsection\n");
