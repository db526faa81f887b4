#include "layout/export.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>
#include <gio/gio.h>
#include <cairo-pdf.h>
#include "ir/atomic-save.h"
#include "layout/pdf-writer.h"
#include "layout/svg-writer.h"

/* PNGs of small graphs are drawn at twice the point size, for sharpness. */
#define PNG_PREFERRED_SCALE 2.0

gboolean
graft_export_format_from_path (const char *path, GraftExportFormat *format, GError **error)
{
  const char *dot = strrchr (path, '.');
  const char *slash = strrchr (path, '/');

  if (dot != NULL && (slash == NULL || dot > slash))
    {
      if (g_ascii_strcasecmp (dot, ".svg") == 0)
        return *format = GRAFT_EXPORT_SVG, TRUE;
      if (g_ascii_strcasecmp (dot, ".png") == 0)
        return *format = GRAFT_EXPORT_PNG, TRUE;
      if (g_ascii_strcasecmp (dot, ".pdf") == 0)
        return *format = GRAFT_EXPORT_PDF, TRUE;
    }
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
               "cannot tell the picture format of '%s': the name must end in .svg, .png or .pdf", path);
  return FALSE;
}

double
graft_export_png_scale (const GraftRect *bounds)
{
  double scale = PNG_PREFERRED_SCALE;
  double w = MAX (bounds->width, 1), h = MAX (bounds->height, 1);

  scale = MIN (scale, GRAFT_EXPORT_PNG_MAX_SIDE / w);
  scale = MIN (scale, GRAFT_EXPORT_PNG_MAX_SIDE / h);
  scale = MIN (scale, sqrt (GRAFT_EXPORT_PNG_MAX_PIXELS / (w * h)));
  /* The surface is the bounds rounded up to whole pixels: shrink until
   * that rounding keeps within the pixel count too. */
  while (ceil (w * scale) * ceil (h * scale) > GRAFT_EXPORT_PNG_MAX_PIXELS)
    scale *= 0.9999;
  return scale;
}

typedef struct {
  int fd;
  int error_number;
} Sink;

static cairo_status_t
write_to_sink (void *closure, const unsigned char *data, unsigned int length)
{
  Sink *sink = closure;

  while (length > 0)
    {
      ssize_t written = write (sink->fd, data, length);

      if (written < 0 && errno == EINTR)
        continue;
      if (written <= 0)
        {
          sink->error_number = written < 0 ? errno : EIO;
          return CAIRO_STATUS_WRITE_ERROR;
        }
      data += written;
      length -= written;
    }
  return CAIRO_STATUS_SUCCESS;
}

typedef struct {
  int fd;
  const char *path;
} SvgTarget;

/* The SVG writer's pieces, to the file. */
static gboolean
write_svg_piece (const char *data, gsize length, gpointer user_data, GError **error)
{
  SvgTarget *target = user_data;

  return graft_atomic_write_all (target->fd, target->path, data, length, error);
}

static void
paint_scene (cairo_surface_t *surface, GraftScene *scene, const GraftPaintOptions *options,
             const GraftRect *bounds, double scale)
{
  cairo_t *cr = cairo_create (surface);
  GraftPaintOptions with_background = *options;

  with_background.paint_background = TRUE;
  with_background.picture = TRUE;
  cairo_scale (cr, scale, scale);
  cairo_translate (cr, -bounds->x, -bounds->y);
  graft_painter_paint (cr, scene, bounds, &with_background);
  cairo_destroy (cr);
}

guint
graft_export_pdf_n_pages (const GraftRect *bounds)
{
  return (guint) ceil (MAX (bounds->width, 1) / GRAFT_EXPORT_PDF_MAX_PAGE_SIDE)
         * (guint) ceil (MAX (bounds->height, 1) / GRAFT_EXPORT_PDF_MAX_PAGE_SIDE);
}

/* Full size, tiled into pages no viewer refuses, left to right and top to
 * bottom. */
static void
paint_pdf_pages (cairo_surface_t *surface, GraftScene *scene, const GraftPaintOptions *options,
                 const GraftRect *bounds)
{
  for (double y = 0; y < MAX (bounds->height, 1); y += GRAFT_EXPORT_PDF_MAX_PAGE_SIDE)
    for (double x = 0; x < MAX (bounds->width, 1); x += GRAFT_EXPORT_PDF_MAX_PAGE_SIDE)
      {
        GraftRect page = { bounds->x + x, bounds->y + y,
                           MIN (GRAFT_EXPORT_PDF_MAX_PAGE_SIDE, MAX (bounds->width, 1) - x),
                           MIN (GRAFT_EXPORT_PDF_MAX_PAGE_SIDE, MAX (bounds->height, 1) - y) };

        cairo_pdf_surface_set_size (surface, page.width, page.height);
        paint_scene (surface, scene, options, &page, 1.0);
        cairo_surface_show_page (surface);
      }
}

static gboolean
has_expanded_group (GraftScene *scene)
{
  for (guint i = 0; i < graft_scene_get_n_groups (scene); i++)
    if (graft_scene_get_group (scene, i)->expanded)
      return TRUE;
  return FALSE;
}

static gboolean
check_png_size (GraftScene *scene, const GraftRect *bounds, double scale, const char *path, GError **error)
{
  if (scale >= GRAFT_EXPORT_PNG_MIN_SCALE)
    return TRUE;
  guint pages = graft_export_pdf_n_pages (bounds);
  g_autofree char *pdf = pages == 1 ? g_strdup ("is one page") : g_strdup_printf ("is tiled into %u pages", pages);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
               "cannot write '%s': the graph is %.0f × %.0f points, and a PNG at a readable scale "
               "would be %.0f × %.0f pixels, past the limit of %d pixels a side and %.0f million in all; "
               "write .svg or .pdf instead (the PDF %s)%s",
               path, bounds->width, bounds->height, ceil (bounds->width * GRAFT_EXPORT_PNG_MIN_SCALE),
               ceil (bounds->height * GRAFT_EXPORT_PNG_MIN_SCALE), GRAFT_EXPORT_PNG_MAX_SIDE,
               GRAFT_EXPORT_PNG_MAX_PIXELS / 1e6, pdf,
               has_expanded_group (scene) ? ", or leave groups collapsed" : "");
  return FALSE;
}

static gboolean
render (GraftScene *scene, const GraftPaintOptions *options, GraftExportFormat format, Sink *sink,
        const char *path, GError **error)
{
  GraftRect bounds;
  cairo_surface_t *surface = NULL;
  cairo_status_t status;
  double scale = 1;

  if (format == GRAFT_EXPORT_SVG)
    {
      SvgTarget target = { sink->fd, path };

      return graft_svg_write_scene (scene, options, write_svg_piece, &target, error);
    }
  if (format == GRAFT_EXPORT_PDF)
    {
      SvgTarget target = { sink->fd, path };
      g_autoptr (GError) local_error = NULL;

      if (graft_pdf_write_scene (scene, options, write_svg_piece, &target, &local_error))
        return TRUE;
      /* A font that cannot be embedded (not TrueType or OpenType) is left to
       * cairo, which draws its glyphs as it can; nothing is written then. */
      if (!g_error_matches (local_error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED))
        {
          g_propagate_error (error, g_steal_pointer (&local_error));
          return FALSE;
        }
    }
  graft_scene_get_bounds (scene, &bounds);
  switch (format)
    {
    case GRAFT_EXPORT_PDF:
      surface = cairo_pdf_surface_create_for_stream (write_to_sink, sink,
                                                     MIN (bounds.width, GRAFT_EXPORT_PDF_MAX_PAGE_SIDE),
                                                     MIN (bounds.height, GRAFT_EXPORT_PDF_MAX_PAGE_SIDE));
      break;
    case GRAFT_EXPORT_PNG:
    default:
      {
        int width, height;

        scale = graft_export_png_scale (&bounds);
        if (!check_png_size (scene, &bounds, scale, path, error))
          return FALSE;
        width = MAX (1, (int) ceil (bounds.width * scale));
        height = MAX (1, (int) ceil (bounds.height * scale));
        /* The background must cover the pixels the rounding up added, or
         * the last column and row stay black (grey once antialiased). */
        bounds.width = width / scale;
        bounds.height = height / scale;
        surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, width, height);
      }
      break;
    }

  if (cairo_surface_status (surface) == CAIRO_STATUS_SUCCESS)
    {
      if (format == GRAFT_EXPORT_PDF)
        paint_pdf_pages (surface, scene, options, &bounds);
      else
        paint_scene (surface, scene, options, &bounds, scale);
    }
  if (format == GRAFT_EXPORT_PNG && cairo_surface_status (surface) == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_write_to_png_stream (surface, write_to_sink, sink);
  else
    {
      cairo_surface_finish (surface);
      status = cairo_surface_status (surface);
    }
  cairo_surface_destroy (surface);

  if (status != CAIRO_STATUS_SUCCESS)
    {
      if (sink->error_number != 0)
        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (sink->error_number), "cannot write '%s': %s",
                     path, g_strerror (sink->error_number));
      else
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot draw '%s': %s", path,
                     cairo_status_to_string (status));
      return FALSE;
    }
  return TRUE;
}

typedef struct {
  GraftScene *scene;
  const GraftPaintOptions *options;
  GraftExportFormat format;
} Export;

static gboolean
write_picture (int fd, const char *path, gpointer user_data, GError **error)
{
  Export *export = user_data;
  Sink sink = { fd, 0 };

  return render (export->scene, export->options, export->format, &sink, path, error);
}

gboolean
graft_scene_export (GraftScene *scene, const GraftPaintOptions *options, const char *path, GError **error)
{
  Export export = { scene, options, GRAFT_EXPORT_SVG };

  if (!graft_export_format_from_path (path, &export.format, error))
    return FALSE;
  return graft_atomic_save (path, write_picture, &export, error);
}
