/* Zoom and pan state of the graph canvas, kept apart from the widget so it
 * can be tested without a display. Screen coordinates are widget pixels
 * from the top-left corner; scene coordinates are layout points. */
#pragma once

#include <glib-object.h>
#include "layout/scene.h"

G_BEGIN_DECLS

#define GRAFT_TYPE_CANVAS_VIEWPORT (graft_canvas_viewport_get_type ())
G_DECLARE_FINAL_TYPE (GraftCanvasViewport, graft_canvas_viewport, GRAFT, CANVAS_VIEWPORT, GObject)

#define GRAFT_CANVAS_MIN_ZOOM 0.005
#define GRAFT_CANVAS_MAX_ZOOM 8.0

GraftCanvasViewport *graft_canvas_viewport_new (void);

void graft_canvas_viewport_set_size (GraftCanvasViewport *self, double width, double height);
double graft_canvas_viewport_get_width (GraftCanvasViewport *self);
double graft_canvas_viewport_get_height (GraftCanvasViewport *self);

/* Screen pixels per scene point. */
double graft_canvas_viewport_get_zoom (GraftCanvasViewport *self);
/* Scene point shown at the screen's top-left corner. */
double graft_canvas_viewport_get_x (GraftCanvasViewport *self);
double graft_canvas_viewport_get_y (GraftCanvasViewport *self);
void graft_canvas_viewport_set_origin (GraftCanvasViewport *self, double x, double y);

/* Multiplies the zoom by factor (clamped) keeping the scene point under
 * the screen point (screen_x, screen_y) where it is. */
void graft_canvas_viewport_zoom_at (GraftCanvasViewport *self, double factor, double screen_x, double screen_y);
/* Sets the zoom keeping the screen centre fixed. */
void graft_canvas_viewport_set_zoom (GraftCanvasViewport *self, double zoom);
/* Moves the content by (dx, dy) screen pixels. */
void graft_canvas_viewport_pan (GraftCanvasViewport *self, double dx, double dy);
/* Shows all of rect with margin pixels around it, centred; never zooms in
 * beyond max_zoom. */
void graft_canvas_viewport_fit (GraftCanvasViewport *self, const GraftRect *rect, double margin, double max_zoom);
void graft_canvas_viewport_center_on (GraftCanvasViewport *self, double x, double y);
/* TRUE if rect is entirely on screen. */
gboolean graft_canvas_viewport_shows (GraftCanvasViewport *self, const GraftRect *rect);

void graft_canvas_viewport_screen_to_scene (GraftCanvasViewport *self, double screen_x, double screen_y,
                                            double *x, double *y);
void graft_canvas_viewport_scene_to_screen (GraftCanvasViewport *self, double x, double y,
                                            double *screen_x, double *screen_y);
/* The part of the scene on screen. */
void graft_canvas_viewport_get_visible (GraftCanvasViewport *self, GraftRect *rect);

G_END_DECLS
