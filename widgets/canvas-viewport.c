#include "widgets/canvas-viewport.h"

struct _GraftCanvasViewport {
  GObject parent_instance;
  double width, height;
  double zoom;
  double x, y;
};

enum {
  PROP_0,
  PROP_ZOOM,
  PROP_X,
  PROP_Y,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (GraftCanvasViewport, graft_canvas_viewport, G_TYPE_OBJECT)

static void
graft_canvas_viewport_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  GraftCanvasViewport *self = GRAFT_CANVAS_VIEWPORT (object);

  switch (prop_id)
    {
    case PROP_ZOOM:
      g_value_set_double (value, self->zoom);
      break;
    case PROP_X:
      g_value_set_double (value, self->x);
      break;
    case PROP_Y:
      g_value_set_double (value, self->y);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_canvas_viewport_set_property (GObject *object, guint prop_id, const GValue *value, GParamSpec *pspec)
{
  GraftCanvasViewport *self = GRAFT_CANVAS_VIEWPORT (object);

  switch (prop_id)
    {
    case PROP_ZOOM:
      graft_canvas_viewport_set_zoom (self, g_value_get_double (value));
      break;
    case PROP_X:
      graft_canvas_viewport_set_origin (self, g_value_get_double (value), self->y);
      break;
    case PROP_Y:
      graft_canvas_viewport_set_origin (self, self->x, g_value_get_double (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
graft_canvas_viewport_class_init (GraftCanvasViewportClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = graft_canvas_viewport_get_property;
  object_class->set_property = graft_canvas_viewport_set_property;

  properties[PROP_ZOOM] = g_param_spec_double ("zoom", NULL, NULL, GRAFT_CANVAS_MIN_ZOOM, GRAFT_CANVAS_MAX_ZOOM, 1,
                                               G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_X] = g_param_spec_double ("x", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0,
                                            G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_Y] = g_param_spec_double ("y", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0,
                                            G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
graft_canvas_viewport_init (GraftCanvasViewport *self)
{
  self->zoom = 1;
}

GraftCanvasViewport *
graft_canvas_viewport_new (void)
{
  return g_object_new (GRAFT_TYPE_CANVAS_VIEWPORT, NULL);
}

void
graft_canvas_viewport_set_size (GraftCanvasViewport *self, double width, double height)
{
  self->width = MAX (width, 0);
  self->height = MAX (height, 0);
}

double
graft_canvas_viewport_get_width (GraftCanvasViewport *self)
{
  return self->width;
}

double
graft_canvas_viewport_get_height (GraftCanvasViewport *self)
{
  return self->height;
}

double
graft_canvas_viewport_get_zoom (GraftCanvasViewport *self)
{
  return self->zoom;
}

double
graft_canvas_viewport_get_x (GraftCanvasViewport *self)
{
  return self->x;
}

double
graft_canvas_viewport_get_y (GraftCanvasViewport *self)
{
  return self->y;
}

static void
update (GraftCanvasViewport *self, double zoom, double x, double y)
{
  gboolean zoom_changed = zoom != self->zoom, x_changed = x != self->x, y_changed = y != self->y;

  self->zoom = zoom;
  self->x = x;
  self->y = y;
  if (zoom_changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ZOOM]);
  if (x_changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_X]);
  if (y_changed)
    g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_Y]);
}

void
graft_canvas_viewport_set_origin (GraftCanvasViewport *self, double x, double y)
{
  update (self, self->zoom, x, y);
}

void
graft_canvas_viewport_zoom_at (GraftCanvasViewport *self, double factor, double screen_x, double screen_y)
{
  double zoom = CLAMP (self->zoom * factor, GRAFT_CANVAS_MIN_ZOOM, GRAFT_CANVAS_MAX_ZOOM);
  double scene_x = self->x + screen_x / self->zoom;
  double scene_y = self->y + screen_y / self->zoom;

  /* The same scene point must land on the same screen point after zooming. */
  update (self, zoom, scene_x - screen_x / zoom, scene_y - screen_y / zoom);
}

void
graft_canvas_viewport_set_zoom (GraftCanvasViewport *self, double zoom)
{
  graft_canvas_viewport_zoom_at (self, zoom / self->zoom, self->width / 2, self->height / 2);
}

void
graft_canvas_viewport_pan (GraftCanvasViewport *self, double dx, double dy)
{
  update (self, self->zoom, self->x - dx / self->zoom, self->y - dy / self->zoom);
}

void
graft_canvas_viewport_center_on (GraftCanvasViewport *self, double x, double y)
{
  update (self, self->zoom, x - self->width / 2 / self->zoom, y - self->height / 2 / self->zoom);
}

void
graft_canvas_viewport_fit (GraftCanvasViewport *self, const GraftRect *rect, double margin, double max_zoom)
{
  double available_w = MAX (self->width - 2 * margin, 1);
  double available_h = MAX (self->height - 2 * margin, 1);
  double zoom = MIN (available_w / MAX (rect->width, 1), available_h / MAX (rect->height, 1));

  zoom = CLAMP (MIN (zoom, max_zoom), GRAFT_CANVAS_MIN_ZOOM, GRAFT_CANVAS_MAX_ZOOM);
  update (self, zoom, rect->x + rect->width / 2 - self->width / 2 / zoom,
          rect->y + rect->height / 2 - self->height / 2 / zoom);
}

gboolean
graft_canvas_viewport_shows (GraftCanvasViewport *self, const GraftRect *rect)
{
  GraftRect visible;

  graft_canvas_viewport_get_visible (self, &visible);
  return rect->x >= visible.x && rect->y >= visible.y && rect->x + rect->width <= visible.x + visible.width
         && rect->y + rect->height <= visible.y + visible.height;
}

void
graft_canvas_viewport_screen_to_scene (GraftCanvasViewport *self, double screen_x, double screen_y,
                                       double *x, double *y)
{
  *x = self->x + screen_x / self->zoom;
  *y = self->y + screen_y / self->zoom;
}

void
graft_canvas_viewport_scene_to_screen (GraftCanvasViewport *self, double x, double y,
                                       double *screen_x, double *screen_y)
{
  *screen_x = (x - self->x) * self->zoom;
  *screen_y = (y - self->y) * self->zoom;
}

void
graft_canvas_viewport_get_visible (GraftCanvasViewport *self, GraftRect *rect)
{
  *rect = (GraftRect) { self->x, self->y, self->width / self->zoom, self->height / self->zoom };
}
