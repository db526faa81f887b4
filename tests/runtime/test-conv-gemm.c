/* The packed convolution (conv-gemm.c: AVX-512 and AVX2+FMA micro-kernels)
 * and the AVX-512 and AVX2 depthwise ones (conv-depthwise.c), each against a direct
 * double-precision loop and
 * with the portable paths they replace: output channels not a multiple
 * of the filter panel, pixel counts around the panel widths (one, two and
 * three vectors), images sharing a panel, panels gathered at fixed
 * offsets (of x or of its parity planes), pointwise panels read in
 * place, strides 1–3, dilation, asymmetric padding, groups, deep filters
 * that are split into K blocks, Winograd tiles in blocks spread over the
 * threads and a fused residual, windows whose outer taps read only
 * padding (dropped), maps narrower than a sliver, depthwise rows with and without unmasked
 * vectors, depthwise vectors that span rows, fused Relu/Clip, with one
 * and two threads, and the filter cached between runs (weights as
 * initializers); 1-D convolutions (im2col by kernel tap); patch
 * convolutions (column stride = kernel width: rows gathered by patch); pointwise slivers of one vector, masked and not, over
 * filter panels of 8 rows and fewer; small maps with the output channels
 * in the lanes (conv-small.c: partial channel blocks, strides, dilation,
 * one-sided pads, residual, 1 to 126 pixels, 1×1 windows on few pixels);
 * stems of up to 4 input channels (conv-stem.c: strides 1 to 4, dilation,
 * asymmetric pads, partial vectors, calls across rows and images);
 * grouped convolutions of few channels a group with the output channels
 * in the lanes (conv-grouped.c: partial blocks, depth multipliers,
 * strides, dilation, residual).
 * Every case also at GRAFT_PRECISION_BF16 where the CPU has AVX512_BF16
 * (/conv-gemm/bf16/…): ungrouped convolutions then multiply x and the
 * weights rounded to bfloat16 with float32 sums (the reference rounds
 * them alike) where graft_conv_bf16_pays; the others stay float32. */
#include <math.h>
#include <string.h>
#include "runtime/kernels/conv-depthwise.h"
#include "runtime/kernels/conv-gemm.h"
#include "runtime/kernels/conv-small.h"
#include "runtime/kernels/conv-grouped.h"
#include "runtime/kernels/conv-stem.h"
#include "runtime/runtime.h"
#include "float-graph.h"
#include "simd-levels.h"

typedef struct {
  gint64 n, c, m, h, w, kh, kw, s, d, pt, pl, pb, pr, group;
  const char *activation;   /* NULL, "Relu" or "Clip" (0, 6) */
  gboolean residual;        /* y = activation (conv + r), r a second input: fused into the convolution */
  gboolean conv1d;          /* x [n, c, w], a 1-D kernel of kw taps (h = kh = 1, pt = pb = 0) */
  gboolean small;           /* taken by the small-map kernels (conv-small.c) at AVX2 and AVX-512 */
  gboolean grouped;         /* taken by the grouped kernels (conv-grouped.c) at AVX2 and AVX-512 */
  gboolean stem;            /* taken by the stem kernels (conv-stem.c) at AVX2 and AVX-512 */
} ConvCase;

static const ConvCase cases[] = {
  { 2, 3, 64, 30, 30, 7, 7, 2, 1, 3, 3, 3, 3, 1, "Relu" },   /* stem-like, stride 2 */
  { 2, 16, 24, 9, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },      /* 81 pixels per image: images share panels */
  { 1, 8, 13, 5, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Clip" },     /* M = 13, 35 pixels */
  { 1, 5, 9, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },        /* pointwise, 16 pixels */
  { 3, 4, 8, 6, 11, 3, 2, 3, 2, 2, 0, 1, 3, 1, "Relu" },     /* stride 3, dilation 2, asymmetric pads */
  { 2, 8, 12, 10, 10, 3, 3, 2, 1, 1, 1, 0, 0, 2, NULL, FALSE, FALSE, FALSE, TRUE },  /* groups */
  { 2, 160, 20, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },     /* K = 1440: two K blocks */
  { 1, 300, 9, 3, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1, "Relu" },    /* K = 2700, padding wider than the input */
  { 2, 4, 10, 12, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },     /* rows longer than a panel */
  /* unit strides with OW = W: panels inside an image gathered at fixed offsets */
  { 1, 6, 10, 10, 12, 3, 3, 1, 2, 2, 2, 2, 2, 1, NULL },     /* dilation 2 */
  { 2, 5, 9, 8, 10, 3, 3, 1, 1, 1, 0, 0, 2, 1, "Relu" },     /* asymmetric pads, OH < H */
  /* stride 2 with OW = ceil (W / 2): gathered from the parity planes */
  { 2, 4, 16, 13, 45, 3, 3, 2, 1, 1, 1, 1, 1, 1, "Relu" },   /* odd height and width */
  { 1, 8, 8, 15, 15, 1, 1, 2, 1, 0, 0, 0, 0, 1, NULL },      /* 1×1 downsample */
  { 2, 5, 11, 9, 13, 1, 1, 3, 1, 0, 0, 0, 0, 1, "Relu" },    /* 1×1, stride 3, odd sizes: subsampled, then pointwise */
  { 1, 8, 12, 10, 7, 1, 1, 2, 1, 0, 0, 0, 0, 2, NULL },      /* 1×1, stride 2, two groups */
  /* pointwise panels read straight from x, gathered where they cross images */
  { 2, 20, 12, 10, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },
  { 2, 8, 12, 8, 8, 1, 1, 1, 1, 0, 0, 0, 0, 2, NULL },       /* groups */
  { 1, 1400, 10, 7, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },    /* two K blocks */
  /* edge shapes */
  { 2, 3, 64, 46, 46, 7, 7, 2, 1, 3, 3, 3, 3, 1, "Relu" },   /* ResNet stem: parity planes, odd OW = 23 */
  { 3, 16, 20, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },      /* 1×1 maps: only the centre tap inside */
  { 2, 32, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },    /* 1×1 maps, pointwise: two pixels in all */
  { 1, 6, 7, 13, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },       /* one column wide */
  { 2, 6, 9, 11, 17, 3, 3, 2, 2, 2, 2, 1, 1, 3, "Clip" },    /* stride 2, dilation 2, groups, odd sizes */
  { 1, 5, 17, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, NULL },       /* padded 1×1: gathered, not read in place */
  { 2, 7, 5, 29, 31, 5, 5, 2, 1, 2, 1, 1, 2, 1, NULL },      /* stride 2 with OW < ceil (W / 2): row gathers */
  { 1, 9, 3, 14, 14, 2, 2, 3, 1, 0, 0, 0, 0, 1, "Relu" },    /* stride 3, window smaller than the stride */
  /* depthwise (group = C = M) */
  { 2, 8, 8, 20, 40, 3, 3, 1, 1, 1, 1, 1, 1, 8, "Clip" },    /* masked, two unmasked, masked tail */
  { 2, 6, 6, 37, 75, 3, 3, 2, 1, 1, 1, 1, 1, 6, "Relu" },    /* stride 2, odd width */
  { 1, 4, 4, 9, 100, 5, 5, 1, 1, 2, 2, 2, 2, 4, NULL },      /* 5×5 */
  { 1, 3, 3, 11, 70, 3, 3, 2, 2, 2, 0, 1, 3, 3, NULL },      /* dilation 2, asymmetric pads */
  { 1, 5, 5, 6, 5, 3, 3, 1, 1, 1, 1, 1, 1, 5, NULL },        /* narrower than a vector */
  { 1, 2, 2, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, "Relu" },      /* padding wider than the input */
  { 1, 4, 4, 2, 64, 1, 7, 1, 1, 0, 3, 0, 3, 4, NULL },       /* one kernel row, 7 columns */
  { 1, 2, 2, 8, 40, 3, 3, 3, 1, 1, 1, 1, 1, 2, NULL },       /* stride 3: the portable kernel */
  /* depthwise, flat planes (AVX-512, unit stride, OW = W): vectors span rows */
  { 2, 3, 3, 9, 9, 3, 3, 1, 1, 1, 0, 1, 2, 3, "Clip" },      /* asymmetric pads */
  { 1, 4, 4, 12, 13, 3, 3, 1, 2, 2, 2, 2, 2, 4, NULL },      /* dilation 2 */
  { 2, 4, 4, 7, 7, 5, 5, 1, 1, 2, 2, 2, 2, 4, "Relu" },      /* 5×5 on 7×7 */
  /* depthwise edge shapes (AVX2: edge vectors masked in the loop) */
  { 3, 7, 7, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 7, "Relu" },      /* 1×1 maps, batch 3 */
  { 1, 5, 5, 2, 2, 3, 3, 2, 1, 1, 1, 1, 1, 5, NULL },        /* 2×2, stride 2 */
  { 3, 4, 4, 33, 57, 3, 3, 2, 1, 1, 1, 1, 1, 4, "Clip" },    /* stride 2, odd sizes, batch 3 */
  { 1, 3, 3, 10, 48, 3, 3, 1, 1, 0, 0, 0, 0, 3, NULL },      /* no padding */
  { 1, 2, 2, 6, 20, 3, 3, 2, 1, 0, 1, 1, 0, 2, NULL },       /* stride 2, asymmetric pads */
  /* depthwise on maps of 1, 2 or 4 pixels that keep their size (AVX2: planes packed side by side in a vector) */
  { 2, 7, 7, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 7, "Clip" },      /* two planes a vector, channels wrap to the next image */
  { 1, 5, 5, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1, 5, NULL },        /* four planes a vector, a one-plane tail */
  { 2, 6, 6, 2, 2, 5, 5, 1, 1, 2, 2, 2, 2, 6, "Relu" },      /* 5×5 */
  { 1, 9, 9, 2, 2, 3, 3, 1, 2, 2, 2, 2, 2, 9, NULL },        /* dilation 2, a one-plane tail */
  { 3, 3, 3, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 3, "Relu" },      /* eight planes a vector, a one-plane tail */
  /* pointwise, per image straight from x to y (slivers of 24 columns with AVX2, 48 with AVX-512; masked tails) */
  { 2, 40, 100, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE },  /* 49 = 24 + 24 + 1; more channels than pixels */
  { 2, 24, 20, 14, 14, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE }, /* 196 = 8·24 + 4, residual */
  { 2, 700, 13, 10, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },        /* deep: blocks of 3 slivers cross images */
  { 3, 6, 11, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },           /* 35 = 24 + 11, batch 3 */
  { 1, 12, 9, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 3, "Relu", TRUE },     /* groups, 16 pixels, residual */
  { 2, 9, 17, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },             /* three pixels per image */
  { 2, 37, 21, 2, 13, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE },  /* 26 = 24 + 2: a two-column tail, odd K */
  { 2, 16, 44, 32, 32, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE }, /* 4 KB planes: slivers copied; 1024 = 42·24 + 16 */
  { 1, 12, 36, 16, 64, 1, 1, 1, 1, 0, 0, 0, 0, 2, "Relu" },       /* 4 KB planes, two groups */
  /* panels of one vector of columns: the whole filter panel per call (AVX2) */
  { 2, 64, 24, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu", TRUE },  /* two 2×2 maps: 8 columns */
  { 1, 40, 13, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },          /* 6 columns, panels of 8 and 5 rows */
  { 2, 32, 16, 4, 4, 3, 3, 2, 1, 1, 1, 1, 1, 1, "Clip" },        /* stride 2 to 2×2 */
  /* one vector of columns: the whole filter panel per call (AVX2) */
  { 1, 19, 13, 1, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE },  /* 7 columns masked, panels of 8 and 5 rows */
  { 1, 33, 21, 2, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu", TRUE },  /* 8 columns unmasked, a 5-row panel */
  { 1, 300, 16, 1, 29, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },         /* 29 = 24 + 5: a masked one-vector tail, deep K */
  /* maps narrower than a sliver: the images side by side as one */
  { 2, 12, 30, 4, 4, 1, 1, 1, 1, 0, 0, 0, 0, 3, "Clip", TRUE },   /* 2 × 16 pixels, groups, residual */
  { 3, 8, 10, 7, 7, 1, 1, 2, 1, 0, 0, 0, 0, 1, "Relu" },           /* stride 2 to 4×4, batch 3 */
  { 2, 50, 40, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL, TRUE },      /* RegNet's 2×2 maps: 8 pixels in all */
  /* maps of up to 8 pixels (AVX-512: two filter panels to a vector, image by image) */
  { 3, 37, 20, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE },   /* 1×1, batch 3, panels of 8, 8 and 4 rows */
  { 2, 45, 43, 2, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu", TRUE },   /* 6 pixels, a 3-row last panel */
  { 2, 130, 72, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },          /* 9 panels: an odd one left in each thread's share */
  { 1, 21, 16, 2, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },           /* 8 pixels, one pair of panels */
  /* ... and the pixels of several images in one pass over the filter (up to 8 columns) */
  { 9, 20, 24, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu", TRUE },   /* 1×1, batch 9: 8 images, then 1 */
  { 3, 17, 33, 1, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE },   /* 3 pixels, batch 3: 2 images, then 1; a 1-row panel */
  { 5, 19, 40, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL },           /* 2 pixels, batch 5: 4 images, then 1 */
  { 9, 20, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },          /* fewer channels than pixels: images over the threads */
  /* depthwise in channel blocks (small maps, narrow strided rows), the plan kept between runs */
  { 2, 40, 40, 4, 4, 5, 5, 1, 1, 2, 2, 2, 2, 40, "Clip" },        /* blocks of 16 and 8 per image */
  { 2, 17, 17, 16, 16, 5, 5, 2, 1, 2, 2, 2, 2, 17, "Relu" },      /* stride 2, a one-channel block */
  { 3, 24, 24, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 24, NULL },          /* 2×2, batch 3 */
  /* taps that read only padding for every output, dropped (DeepLabV3's atrous pyramid at small inputs) */
  { 2, 16, 24, 4, 4, 3, 3, 1, 12, 12, 12, 12, 12, 1, "Relu", TRUE }, /* only the centre tap reads: 1×1 */
  { 1, 6, 10, 6, 7, 5, 3, 1, 2, 0, 2, 8, 2, 1, "Clip" },            /* the last two rows of taps below the map */
  { 2, 8, 8, 3, 3, 3, 3, 1, 4, 4, 4, 4, 4, 2, NULL },               /* groups */
  /* depthwise 3×3 (AVX2: unrolled taps, edge vectors through a small buffer) */
  { 2, 3, 3, 9, 41, 3, 3, 1, 1, 1, 0, 1, 2, 3, "Clip" },     /* asymmetric pads, one output past the last vector */
  { 1, 4, 4, 7, 66, 3, 3, 2, 1, 0, 0, 1, 1, 4, "Relu" },     /* stride 2, padding after only (even width) */
  { 2, 2, 2, 3, 80, 3, 3, 2, 1, 2, 2, 2, 2, 2, NULL },       /* stride 2, pads of 2: rows and columns off the input */
  { 1, 3, 3, 5, 33, 3, 3, 1, 1, 1, 1, 1, 1, 3, NULL },       /* stride 1, OW = W = 33 (not flat): a one-pixel tail */
  { 1, 2, 2, 4, 17, 3, 3, 2, 1, 1, 1, 1, 1, 2, "Clip" },     /* stride 2, every vector at an edge */
  /* 3×3 stride 1 with 16 channels and more: Winograd (conv-winograd.c) */
  { 3, 64, 24, 36, 44, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu", TRUE },  /* five blocks of tiles over the threads */
  { 2, 32, 40, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL, TRUE },    /* one block: panels over the threads */
  { 2, 16, 24, 28, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu", TRUE },  /* 98 tiles in one block: narrowed to two per thread, a 2-tile tail */
  { 2, 16, 17, 7, 9, 3, 3, 1, 1, 0, 2, 1, 0, 1, "Clip" },          /* asymmetric pads, odd M */
  /* patch convolutions, column stride = kernel width (SAM's and ViT's patch embedding): patch rows */
  { 2, 3, 16, 64, 64, 16, 16, 16, 1, 0, 0, 0, 0, 1, NULL },  /* SAM's, K = 768 */
  { 1, 5, 7, 9, 12, 3, 3, 3, 1, 0, 0, 0, 0, 1, "Relu" },     /* 3×3 stride 3 */
  { 2, 4, 6, 10, 8, 4, 4, 4, 1, 1, 0, 1, 0, 1, NULL, TRUE }, /* rows padded (taps above and below the map), residual */
  { 1, 6, 4, 8, 10, 2, 2, 2, 1, 0, 0, 0, 0, 2, NULL },       /* groups */
  { 1, 3, 5, 8, 11, 3, 3, 3, 1, 0, 0, 0, 0, 1, NULL },       /* columns past the last patch unread */
  { 1, 3, 5, 8, 8, 2, 2, 2, 1, 0, 1, 0, 1, 1, "Clip" },      /* columns padded: strided gathers */
  /* small maps, output channels in the lanes (conv-small.c): per tap only the pixels it reads the map for */
  { 2, 16, 40, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Clip", TRUE, FALSE, TRUE },  /* 4×4, blocks of 16, 16 and 8 channels, residual */
  { 2, 64, 24, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Relu", TRUE, FALSE, TRUE },  /* 2×2: 4 of 9 taps per pixel */
  { 3, 9, 20, 5, 3, 3, 3, 2, 1, 1, 0, 1, 2, 1, NULL, FALSE, FALSE, TRUE },    /* stride 2, asymmetric pads, batch 3 */
  { 1, 24, 33, 6, 6, 5, 5, 1, 2, 4, 4, 4, 4, 1, "Relu", FALSE, FALSE, TRUE }, /* 5×5, dilation 2, 33 channels */
  { 1, 24, 33, 6, 6, 5, 5, 1, 2, 2, 2, 2, 2, 1, "Relu" }, /* the same padded by 2: the outer taps read only padding, trimmed to 3×3 */
  { 2, 12, 8, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL, FALSE, FALSE, TRUE },    /* 126 pixels, one block of 8 channels */
  /* at bf16 (the bf16 tiles and the narrow bf16 path, conv-gemm.c): pairs of k, odd K, K blocks of whole pairs */
  { 2, 33, 20, 9, 9, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu", TRUE },  /* pointwise, K = 33: a lone last k; panels cross images */
  { 2, 171, 16, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },         /* K = 1539: three blocks of 514, 514, 511 */
  { 2, 40, 24, 15, 15, 1, 1, 2, 1, 0, 0, 0, 0, 1, "Clip" },      /* strided 1×1: subsampled, then pointwise */
  { 2, 24, 40, 19, 21, 3, 3, 2, 1, 1, 1, 1, 1, 1, "Relu", TRUE }, /* stride 2 from the parity planes, residual */
  { 2, 32, 32, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },          /* 8 Winograd tiles: bf16 takes it */
  { 2, 16, 16, 32, 32, 2, 2, 2, 1, 0, 0, 0, 0, 1, NULL },        /* patches, 512 columns */
  { 2, 19, 21, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Clip", TRUE },  /* 40 columns: the small-map kernels keep it (f32) */
  { 2, 40, 21, 2, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, "Clip", TRUE },  /* narrow, gathered: padded 1×1, 40 columns, 21 rows */
  { 2, 32, 40, 4, 6, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL, TRUE },    /* narrow pointwise: 48 columns, 16 + 16 + 16 */
  { 3, 35, 8, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu" },         /* narrow: 27 columns over 3 images, one panel */
  { 2, 16, 24, 16, 16, 4, 4, 4, 1, 0, 0, 0, 0, 1, NULL },        /* 4×4 patches on 32 columns: small-map kernels (f32) */
  { 2, 8, 17, 8, 8, 3, 3, 2, 1, 1, 1, 1, 1, 1, "Clip", TRUE, FALSE, TRUE },   /* stride 2 to 4×4, 17 channels */
  { 2, 40, 70, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, NULL },   /* 1×1 maps: the centre tap alone, trimmed to a pointwise convolution */
  { 1, 10, 9, 3, 4, 2, 3, 1, 1, 0, 1, 1, 0, 1, "Relu", TRUE, FALSE, TRUE },   /* 2×3 window, padding on one side each */
  /* grouped, few channels a group, output channels in the lanes (conv-grouped.c) */
  { 2, 48, 48, 16, 16, 3, 3, 2, 1, 1, 1, 1, 1, 6, "Relu", FALSE, FALSE, FALSE, TRUE },   /* RegNet's: 8 a group, stride 2 */
  { 2, 104, 104, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 13, "Relu", TRUE, FALSE, FALSE, TRUE },   /* 8×8, residual */
  { 2, 40, 40, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1, 5, NULL, FALSE, FALSE, FALSE, TRUE },       /* 2×2: four pixels a call */
  { 2, 16, 16, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 2, "Clip" },        /* 1×1 maps: trimmed to the centre tap, the pointwise path's */
  { 3, 16, 24, 9, 7, 3, 3, 2, 1, 1, 0, 1, 2, 2, "Relu", TRUE, FALSE, FALSE, TRUE },      /* asymmetric pads, 12 a group: a partial block */
  { 1, 12, 20, 9, 9, 3, 3, 1, 2, 2, 2, 2, 2, 4, "Clip", TRUE, FALSE, FALSE, TRUE },      /* 3 in, 5 out a group, dilation 2, 81 pixels */
  { 2, 6, 24, 5, 6, 5, 3, 1, 1, 2, 1, 0, 1, 6, NULL, FALSE, FALSE, FALSE, TRUE },        /* depth multiplier 4 (1 in, 4 out), 5×3 window */
  { 1, 32, 32, 12, 11, 3, 3, 3, 1, 1, 1, 1, 1, 2, NULL, FALSE, FALSE, FALSE, TRUE },     /* 16 a group, stride 3 */
  { 2, 16, 32, 10, 10, 1, 1, 1, 1, 0, 0, 0, 0, 4, "Relu" },                              /* grouped 1×1: the pointwise path's */
  { 2, 64, 64, 4, 3, 3, 3, 1, 1, 1, 1, 1, 1, 2, "Relu", TRUE, FALSE, FALSE, TRUE },     /* 32 a group on a small map, residual */
  { 2, 48, 16, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1, 2, "Relu" },                              /* 24 a group on 10×10: the packed GEMM's */
  { 1, 8, 8, 40, 40, 3, 3, 1, 1, 1, 1, 1, 1, 2, NULL },                                  /* 4 out a group on 40×40: the packed GEMM's */
  /* 1×1 windows whose pixels would fill the pointwise kernels' vectors less than 70 % */
  { 1, 24, 40, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Clip", TRUE, FALSE, TRUE },  /* 9 pixels, 40 channels, residual */
  { 1, 16, 33, 5, 5, 1, 1, 2, 1, 0, 0, 0, 0, 1, "Relu", FALSE, FALSE, TRUE }, /* stride 2 to 3×3, 33 channels */
  { 2, 64, 100, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, "Relu", TRUE },  /* 18 columns: AVX-512 only (AVX2: 75 % of three ymm) */
  { 2, 256, 40, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, NULL, TRUE, FALSE, TRUE }, /* the same 256 deep: AVX2 too */
  /* few input channels (conv-stem.c): column phases of the padded input, vectors of output rows */
  { 2, 3, 13, 20, 20, 3, 3, 2, 1, 0, 0, 0, 0, 1, "Relu", TRUE, FALSE, FALSE, FALSE, TRUE },  /* unpadded, OW = 9: calls span rows and images */
  { 3, 1, 9, 9, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, "Clip", FALSE, FALSE, FALSE, FALSE, TRUE },   /* one channel, rows of 70: a partial last vector */
  { 1, 4, 6, 11, 37, 4, 4, 4, 1, 2, 3, 1, 0, 1, NULL, TRUE, FALSE, FALSE, FALSE, TRUE },     /* 64 taps, stride 4, asymmetric pads */
  { 2, 2, 17, 12, 25, 3, 3, 2, 2, 2, 1, 0, 2, 1, NULL, FALSE, FALSE, FALSE, FALSE, TRUE },   /* dilation 2, stride 2 */
  { 2, 3, 16, 33, 33, 3, 3, 2, 1, 1, 1, 1, 1, 1, "Relu", FALSE, FALSE, FALSE, FALSE, TRUE },  /* MnasNet's stem: OW = 17 */
  /* 1-D (wav2vec2's feature extractor and grouped positional convolution): im2col by kernel tap */
  { 2, 1, 16, 1, 800, 1, 10, 5, 1, 0, 0, 0, 0, 1, NULL, FALSE, TRUE },     /* one channel, stride 5 */
  { 2, 16, 16, 1, 159, 1, 3, 2, 1, 0, 0, 0, 0, 1, "Relu", FALSE, TRUE },   /* stride 2, odd width */
  { 2, 32, 32, 1, 79, 1, 16, 1, 1, 0, 8, 0, 8, 4, NULL, FALSE, TRUE },     /* groups, padded: OW = W + 1 */
  { 1, 6, 5, 1, 13, 1, 5, 3, 2, 0, 7, 0, 1, 1, "Clip", FALSE, TRUE },      /* stride 3, dilation 2, asymmetric pads */
  { 3, 3, 4, 1, 2, 1, 3, 1, 1, 0, 4, 0, 4, 1, NULL, TRUE, TRUE },          /* padding wider than the input, residual */
};

static GraftModel *
build_model (const ConvCase *c, const float *wv, const float *bv)
{
  GraftModel *model = graft_model_new (GRAFT_MODEL_FORMAT_ONNX);
  GraftGraph *g = graft_graph_new ("conv");
  graft_model_set_opset (model, "onnx", 17);
  gint64 dx[] = { c->n, c->c, c->h, c->w }, pads[] = { c->pt, c->pl, c->pb, c->pr };
  const char *conv_out = float_graph_conv_output (c->residual, c->activation);
  if (c->conv1d)
    dx[2] = c->w;
  float_graph_add_input (g, "x", c->conv1d ? 3 : 4, dx);
  if (c->residual)
    {
      gint64 dr[] = { c->n, c->m, (c->h + c->pt + c->pb - (c->kh - 1) * c->d - 1) / c->s + 1,
                      (c->w + c->pl + c->pr - (c->kw - 1) * c->d - 1) / c->s + 1 };
      if (c->conv1d)
        dr[2] = dr[3];
      float_graph_add_input (g, "r", c->conv1d ? 3 : 4, dr);
    }
  if (c->conv1d)
    {
      gint64 dw[] = { c->m, c->c / c->group, c->kw }, db[] = { c->m }, pads1d[] = { c->pl, c->pr };
      float_graph_add_initializer (g, "w", 3, dw, wv);
      float_graph_add_initializer (g, "b", 1, db, bv);
      GraftNode *conv = float_graph_add_node (g, "Conv", "x", "w", "b", conv_out);
      graft_node_add_attribute (conv, graft_attribute_new_ints ("strides", &c->s, 1));
      graft_node_add_attribute (conv, graft_attribute_new_ints ("dilations", &c->d, 1));
      graft_node_add_attribute (conv, graft_attribute_new_ints ("pads", pads1d, 2));
      graft_node_add_attribute (conv, graft_attribute_new_int ("group", c->group));
    }
  else
    float_graph_add_conv (g, "x", conv_out, c->m, c->c / c->group, c->kh, c->kw, wv, bv, c->s, c->d, pads, c->group);
  float_graph_add_conv_epilogue (g, c->residual, c->activation);
  graft_model_set_graph (model, g);
  return model;
}

static double
reference (const ConvCase *c, const float *xv, const float *wv, const float *bv, double residual, gint64 n, gint64 m,
           gint64 oh, gint64 ow, gboolean bf16)
{
  gint64 Cg = c->c / c->group, g = m / (c->m / c->group);
  double acc = bv[m];
  for (gint64 ci = 0; ci < Cg; ci++)
    for (gint64 ki = 0; ki < c->kh; ki++)
      for (gint64 kj = 0; kj < c->kw; kj++)
        {
          gint64 ih = oh * c->s + ki * c->d - c->pt, iw = ow * c->s + kj * c->d - c->pl;
          if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w)
            continue;
          acc += float_graph_operand (xv[((n * c->c + g * Cg + ci) * c->h + ih) * c->w + iw], bf16) *
                 float_graph_operand (wv[((m * Cg + ci) * c->kh + ki) * c->kw + kj], bf16);
        }
  return float_graph_activate (acc + residual, c->activation);
}

static void
check_case (const ConvCase *c, GraftPrecision precision)
{
  /* only the ungrouped convolutions where bf16 pays compute in bf16 */
  GraftWindow window = { .n = 2, .in = { c->h, c->w }, .kernel = { c->kh, c->kw }, .stride = { c->s, c->s },
                         .dilation = { c->d, c->d }, .pad_begin = { c->pt, c->pl }, .pad_end = { c->pb, c->pr } };
  if (c->conv1d)
    window = (GraftWindow) { .n = 1, .in = { c->w }, .kernel = { c->kw }, .stride = { c->s }, .dilation = { c->d },
                             .pad_begin = { c->pl }, .pad_end = { c->pr } };
  for (int d = 0; d < window.n; d++)
    window.out[d] = (window.in[d] + window.pad_begin[d] + window.pad_end[d] - (window.kernel[d] - 1) * c->d - 1) / c->s + 1;
  gboolean bf16 = precision == GRAFT_PRECISION_BF16 && graft_conv_bf16_pays (&window, c->n, c->c, c->m, c->group);
  if (c->small)
    g_assert_true (graft_conv_small_pays (&window, c->n, c->c, c->m, c->group) ==
                   (graft_simd_get_level () >= GRAFT_SIMD_AVX2));
  g_assert_true (graft_conv_grouped_pays (&window, c->n, c->c, c->m, c->group) ==
                 (c->grouped && graft_simd_get_level () >= GRAFT_SIMD_AVX2));
  if (c->stem)
    g_assert_true (graft_conv_stem_pays (&window, c->c, c->m, c->group) == (graft_simd_get_level () >= GRAFT_SIMD_AVX2));
  gint64 Cg = c->c / c->group, nx = c->n * c->c * c->h * c->w, nw = c->m * Cg * c->kh * c->kw;
  g_autofree float *xv = g_new (float, nx);
  g_autofree float *wv = g_new (float, nw);
  g_autofree float *bv = g_new (float, c->m);
  for (gint64 i = 0; i < nx; i++)
    xv[i] = float_graph_value_at (i, 1);
  for (gint64 i = 0; i < nw; i++)
    wv[i] = float_graph_value_at (i, 7) / sqrtf ((float) (Cg * c->kh * c->kw));
  for (gint64 i = 0; i < c->m; i++)
    bv[i] = float_graph_value_at (i, 3);
  g_autoptr(GraftModel) model = build_model (c, wv, bv);
  g_autoptr(GError) error = NULL;
  g_autoptr(GraftRuntime) rt = graft_runtime_new (model, &error);
  g_assert_no_error (error);
  g_assert_true (graft_runtime_set_precision (rt, precision, &error));
  gint64 OH = (c->h + c->pt + c->pb - (c->kh - 1) * c->d - 1) / c->s + 1;
  gint64 OW = (c->w + c->pl + c->pr - (c->kw - 1) * c->d - 1) / c->s + 1;

  for (guint threads = 1; threads <= 2; threads++)
    for (int again = 0; again < 2; again++)   /* the second run uses the cached packed filter */
      {
        graft_runtime_set_n_threads (rt, threads);
        gint64 dx[] = { c->n, c->c, c->h, c->w };
        int rank = c->conv1d ? 3 : 4;
        if (c->conv1d)
          dx[2] = c->w;
        g_autoptr(GHashTable) inputs = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                                              (GDestroyNotify) graft_rt_tensor_unref);
        GraftRtTensor *x = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dx, NULL);
        memcpy (x->data, xv, x->nbytes);
        g_hash_table_insert (inputs, (gpointer) "x", x);
        if (c->residual)
          {
            gint64 dr[] = { c->n, c->m, c->conv1d ? OW : OH, OW };
            GraftRtTensor *r = graft_rt_tensor_new (GRAFT_DTYPE_FLOAT32, rank, dr, NULL);
            for (gint64 i = 0; i < c->n * c->m * OH * OW; i++)
              ((float *) r->data)[i] = float_graph_value_at (i, 5);
            g_hash_table_insert (inputs, (gpointer) "r", r);
          }
        g_autoptr(GPtrArray) out = graft_runtime_run (rt, inputs, NULL, NULL, NULL, &error);
        g_assert_no_error (error);
        GraftRtTensor *y = out->pdata[0];
        g_assert_cmpint (y->rank, ==, rank);
        g_assert_cmpint (y->dims[1], ==, c->m);
        g_assert_cmpint (y->dims[rank - 2], ==, c->conv1d ? c->m : OH);
        g_assert_cmpint (y->dims[rank - 1], ==, OW);
        const float *yv = y->data;
        for (gint64 n = 0; n < c->n; n++)
          for (gint64 m = 0; m < c->m; m++)
            for (gint64 oh = 0; oh < OH; oh++)
              for (gint64 ow = 0; ow < OW; ow++)
                {
                  gint64 at = ((n * c->m + m) * OH + oh) * OW + ow;
                  double want = reference (c, xv, wv, bv, c->residual ? float_graph_value_at (at, 5) : 0, n, m, oh, ow,
                                           bf16);
                  float got = yv[at];
                  if (fabs (got - want) > 1e-4 * MAX (1, fabs (want)))
                    g_error ("%s%s: %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT " conv, %u threads: y[%" G_GINT64_FORMAT
                             ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT "] = %g, want %g",
                             graft_simd_level_to_string (graft_simd_get_level ()), bf16 ? " bf16" : "", c->kh, c->kw,
                             threads, n, m, oh, ow, got, want);
                }
        /* y's buffer goes back to the runtime's pool and may be the next
         * run's output: NaN in it, so that a value the next run leaves
         * unwritten cannot pass as this run's. */
        memset (y->data, 0xff, y->nbytes);
      }
}

/* Each case at each SIMD level: the AVX-512 kernels, the AVX2 paths, the
 * portable ones. A level this CPU lacks is a skip, never a pass. */
static void
test_case_at_level (gconstpointer data)
{
  const GraftTestLevelCase *lc = data;

  if (!graft_test_use_simd_level (lc->level))
    return;
  /* the packed GEMM runs at every level but the portable one (im2col + BLAS) */
  g_assert_cmpint (graft_conv_gemm_available (), ==, lc->level >= GRAFT_SIMD_AVX2);
  check_case (lc->item, GRAFT_PRECISION_F32);
  graft_simd_set_max_level (GRAFT_SIMD_AVX512);
}

static void
test_case_bf16 (gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  if (!graft_precision_available (GRAFT_PRECISION_BF16, &error))
    {
      g_test_skip (error->message);
      return;
    }
  check_case (data, GRAFT_PRECISION_BF16);
}

/* Windows whose taps partly read only padding (a dilation as wide as the
 * map, a 3×3 on a 1×1 map) are left to the trimmed path, which keeps only
 * the taps read; the same 3×3 at dilation 1 on 4×4 takes the small-map
 * kernel where there is one. */
static void
test_small_declines_padding_only_taps (void)
{
  gboolean has_small = graft_simd_get_level () >= GRAFT_SIMD_AVX2;
  GraftWindow atrous = { .n = 2, .in = { 4, 4 }, .out = { 4, 4 }, .kernel = { 3, 3 }, .stride = { 1, 1 },
                         .dilation = { 12, 12 }, .pad_begin = { 12, 12 }, .pad_end = { 12, 12 } };
  GraftWindow one_pixel = { .n = 2, .in = { 1, 1 }, .out = { 1, 1 }, .kernel = { 3, 3 }, .stride = { 1, 1 },
                            .dilation = { 1, 1 }, .pad_begin = { 1, 1 }, .pad_end = { 1, 1 } };
  GraftWindow plain = atrous;
  for (int d = 0; d < 2; d++)
    plain.dilation[d] = plain.pad_begin[d] = plain.pad_end[d] = 1;
  GraftWindow trimmed;
  gint64 lo[2];

  g_assert_true (graft_window_trim (&atrous, &trimmed, lo));
  g_assert_cmpint (trimmed.kernel[0], ==, 1);
  g_assert_cmpint (trimmed.kernel[1], ==, 1);
  g_assert_cmpint (lo[0], ==, 1);
  g_assert_false (graft_conv_small_pays (&atrous, 2, 64, 64, 1));
  g_assert_false (graft_conv_small_pays (&one_pixel, 2, 64, 64, 1));
  g_assert_false (graft_window_trim (&plain, &trimmed, lo));
  g_assert_true (graft_conv_small_pays (&plain, 2, 64, 64, 1) == has_small);
}

/* 1×1 windows take the small-map kernels only where the pointwise
 * kernels' vectors of pixels would go more than 30 % empty (20 % from 256
 * input channels on): 9 pixels yes,
 * 32 (two zmm, four ymm) or 2×2 maps (AVX-512's pair kernels) no, nor
 * padded ones or fewer output channels than a vector. */
static void
test_small_sparse_pointwise (void)
{
  gboolean has_small = graft_simd_get_level () >= GRAFT_SIMD_AVX2;
  GraftWindow nine = { .n = 2, .in = { 3, 3 }, .out = { 3, 3 }, .kernel = { 1, 1 }, .stride = { 1, 1 },
                       .dilation = { 1, 1 } };
  GraftWindow sixteen = nine, padded = nine;
  sixteen.in[0] = sixteen.in[1] = sixteen.out[0] = sixteen.out[1] = 4;
  padded.pad_begin[0] = padded.pad_end[0] = 1;
  padded.out[0] = 5;

  g_assert_true (graft_conv_small_pays (&nine, 1, 512, 1000, 1) == has_small);
  g_assert_true (graft_conv_small_pays (&nine, 2, 512, 1000, 1) == has_small);
  g_assert_false (graft_conv_small_pays (&nine, 1, 512, 4, 1));
  g_assert_false (graft_conv_small_pays (&sixteen, 2, 512, 1000, 1));
  g_assert_false (graft_conv_small_pays (&padded, 1, 512, 1000, 1));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/conv-gemm/small-declines-padding-only-taps", test_small_declines_padding_only_taps);
  g_test_add_func ("/conv-gemm/small-sparse-pointwise", test_small_sparse_pointwise);
  graft_test_add_cases_at_levels ("/conv-gemm", cases, sizeof cases[0], G_N_ELEMENTS (cases), test_case_at_level);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("/conv-gemm/bf16/case-%u", i);
      g_test_add_data_func (path, &cases[i], test_case_bf16);
    }
  return g_test_run ();
}
