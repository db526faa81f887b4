/* ImageDecoder (20) for the formats that need no codec library: binary
 * PNM (P5 grey, P6 colour, up to 8 bits) and uncompressed BMP (24- or
 * 32-bit). JPEG, PNG, TIFF, WebP and JPEG 2000 are refused by name. */
#include <string.h>
#include "runtime/kernels/kernel-util.h"

typedef struct {
  gint64 width, height;
  guint8 *rgb;   /* height × width × 3, owned */
} Image;

static gboolean
parse_pnm_number (const guint8 *data, gsize size, gsize *at, gint64 *value)
{
  /* whitespace and # comments separate the header fields */
  while (*at < size && (g_ascii_isspace (data[*at]) || data[*at] == '#'))
    {
      if (data[*at] == '#')
        while (*at < size && data[*at] != '\n')
          (*at)++;
      else
        (*at)++;
    }
  if (*at >= size || !g_ascii_isdigit (data[*at]))
    return FALSE;
  *value = 0;
  while (*at < size && g_ascii_isdigit (data[*at]) && *value < (1 << 24))
    *value = *value * 10 + (data[(*at)++] - '0');
  return TRUE;
}

static gboolean
decode_pnm (const guint8 *data, gsize size, Image *image, GError **error)
{
  gboolean grey = data[1] == '5';
  gsize at = 2;
  gint64 maxval;
  if (!parse_pnm_number (data, size, &at, &image->width) || !parse_pnm_number (data, size, &at, &image->height) ||
      !parse_pnm_number (data, size, &at, &maxval) || at >= size)
    return graft_kernel_fail (error, "PNM header is malformed");
  at++;   /* the single whitespace before the pixels */
  gint64 channels = grey ? 1 : 3, pixels = image->width * image->height;
  if (maxval < 1 || maxval > 255)
    return graft_kernel_unsupported (error, "PNM with %" G_GINT64_FORMAT " levels (8-bit only)", maxval);
  if (image->width < 1 || image->height < 1 || (gsize) (pixels * channels) > size - at)
    return graft_kernel_fail (error, "PNM data is shorter than its %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " header says",
                              image->width, image->height);
  image->rgb = g_malloc (pixels * 3);
  for (gint64 p = 0; p < pixels; p++)
    for (int c = 0; c < 3; c++)
      image->rgb[p * 3 + c] = data[at + p * channels + (grey ? 0 : c)] * 255 / maxval;
  return TRUE;
}

static guint32
le32 (const guint8 *p)
{
  return p[0] | (p[1] << 8) | (p[2] << 16) | ((guint32) p[3] << 24);
}

static gboolean
decode_bmp (const guint8 *data, gsize size, Image *image, GError **error)
{
  if (size < 54)
    return graft_kernel_fail (error, "BMP header is truncated");
  guint32 offset = le32 (data + 10);
  gint32 width = (gint32) le32 (data + 18), height = (gint32) le32 (data + 22);
  guint bits = data[28] | (data[29] << 8);
  guint32 compression = le32 (data + 30);
  if (compression != 0 || (bits != 24 && bits != 32))
    return graft_kernel_unsupported (error, "BMP with %u bits per pixel or compression %u (uncompressed 24/32-bit only)",
                                     bits, compression);
  gboolean bottom_up = height > 0;
  image->width = width;
  image->height = ABS ((gint64) height);
  gint64 row_size = ((gint64) width * (bits / 8) + 3) / 4 * 4;
  if (width < 1 || image->height < 1 || offset > size || (gsize) (row_size * image->height) > size - offset)
    return graft_kernel_fail (error, "BMP pixel data is shorter than its %d×%" G_GINT64_FORMAT " header says",
                              width, image->height);
  image->rgb = g_malloc (image->width * image->height * 3);
  for (gint64 y = 0; y < image->height; y++)
    {
      const guint8 *row = data + offset + (bottom_up ? image->height - 1 - y : y) * row_size;
      for (gint64 x = 0; x < image->width; x++)
        for (int c = 0; c < 3; c++)   /* stored as B, G, R */
          image->rgb[(y * image->width + x) * 3 + c] = row[x * (bits / 8) + 2 - c];
    }
  return TRUE;
}

static const char *
codec_format (const guint8 *data, gsize size)
{
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8)
    return "JPEG";
  if (size >= 8 && memcmp (data, "\x89PNG", 4) == 0)
    return "PNG";
  if (size >= 4 && (memcmp (data, "II*", 3) == 0 || memcmp (data, "MM\0*", 4) == 0))
    return "TIFF";
  if (size >= 12 && memcmp (data, "RIFF", 4) == 0 && memcmp (data + 8, "WEBP", 4) == 0)
    return "WebP";
  if (size >= 12 && (memcmp (data, "\0\0\0\x0cjP", 6) == 0 || memcmp (data, "\xff\x4f\xff\x51", 4) == 0))
    return "JPEG 2000";
  return NULL;
}

static gboolean
infer_image_decoder (GraftInferContext *ctx, GError **error)
{
  graft_infer_set_output_unknown (ctx, 0, GRAFT_DTYPE_UINT8, 3);
  return TRUE;
}

static gboolean
kernel_image_decoder (GraftKernelContext *ctx, GError **error)
{
  GraftRtTensor *encoded = ctx->inputs[0];
  const char *pixel_format = graft_node_attr_string (ctx->node, "pixel_format", "RGB");
  gboolean grey = g_str_equal (pixel_format, "Grayscale"), bgr = g_str_equal (pixel_format, "BGR");
  if (!grey && !bgr && !g_str_equal (pixel_format, "RGB"))
    return graft_kernel_fail (error, "unknown pixel_format '%s' (RGB, BGR, Grayscale)", pixel_format);
  if (encoded->dtype != GRAFT_DTYPE_UINT8 || encoded->rank != 1)
    return graft_kernel_fail (error, "encoded_stream must be a 1-D uint8 tensor");
  const guint8 *data = encoded->data;
  gsize size = encoded->numel;
  Image image = { 0 };
  gboolean ok;
  const char *codec = codec_format (data, size);
  if (size >= 2 && data[0] == 'P' && (data[1] == '5' || data[1] == '6'))
    ok = decode_pnm (data, size, &image, error);
  else if (size >= 2 && data[0] == 'B' && data[1] == 'M')
    ok = decode_bmp (data, size, &image, error);
  else
    ok = codec ? graft_kernel_unsupported (error, "%s images (no codec library is linked; PNM and BMP are decoded)", codec)
               : graft_kernel_fail (error, "the stream is not an image format ImageDecoder knows");
  g_autofree guint8 *rgb = image.rgb;
  if (!ok)
    return FALSE;
  gint64 dims[3] = { image.height, image.width, grey ? 1 : 3 };
  GraftRtTensor *y = graft_kernel_alloc_output (ctx, 0, GRAFT_DTYPE_UINT8, 3, dims, error);
  if (y == NULL)
    return FALSE;
  guint8 *out = y->data;
  for (gint64 p = 0; p < image.width * image.height; p++)
    {
      const guint8 *px = rgb + p * 3;
      if (grey)   /* ITU-R 601 luma in 16-bit fixed point, as Pillow's convert ("L") */
        out[p] = (px[0] * 19595 + px[1] * 38470 + px[2] * 7471 + 0x8000) >> 16;
      else
        for (int c = 0; c < 3; c++)
          out[p * 3 + c] = px[bgr ? 2 - c : c];
    }
  return TRUE;
}

const GraftOpSchema graft_ops_image[] = {
  { "onnx::ImageDecoder", 20, 0, infer_image_decoder, kernel_image_decoder, 0, "encoded_stream", "image" },
  { NULL }
};
