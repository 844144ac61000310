#!/usr/bin/python3
"""data/masks/draw_masks.py OUT: writes OUT/<stem>.png: object masks drawn by hand as polygons and ellipses over the
sample photos (../shared/images), 255 = object, 0 = background, at each photo's own size."""
import sys
import cv2
import numpy as np

SHAPES = {
    "chelsea": ((300, 451), [("poly", [(0, 0), (420, 0), (415, 60), (375, 110), (360, 160), (350, 210), (335, 250),
                                       (320, 300), (0, 300)])]),
    "coffee": ((400, 600), [("ellipse", (278, 232), (203, 153)), ("ellipse", (290, 72), (118, 56)),
                            ("poly", [(398, 78), (412, 66), (424, 72), (398, 185), (384, 182)])]),
    "astronaut": ((512, 512), [("poly", [(160, 40), (200, 15), (260, 15), (298, 50), (296, 115), (270, 165),
                                         (305, 200), (330, 250), (360, 290), (365, 350), (420, 340), (480, 360),
                                         (505, 420), (511, 511), (20, 511), (20, 400), (30, 320), (50, 270),
                                         (110, 235), (120, 200), (125, 170), (168, 140), (150, 80)])]),
    "rocket": ((427, 640), [("poly", [(322, 125), (312, 140), (308, 175), (308, 405), (335, 405), (335, 175),
                                      (332, 140)])]),
}

out = sys.argv[1]
for stem, ((h, w), shapes) in SHAPES.items():
    m = np.zeros((h, w), np.uint8)
    for s in shapes:
        if s[0] == "poly":
            cv2.fillPoly(m, [np.array(s[1], np.int32)], 255)
        else:
            cv2.ellipse(m, s[1], s[2], 0, 0, 360, 255, -1)
    cv2.imwrite(f"{out}/{stem}.png", m, [cv2.IMWRITE_PNG_COMPRESSION, 9])
