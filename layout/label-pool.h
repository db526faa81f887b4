/* The labels of one GraftLayout, each distinct text fitted and measured
 * once: a big graph repeats the same few labels by the thousand (a
 * transformer's layers, the scale probe's 25,000 identical blocks), and
 * its boxes and scenes share them instead of holding a copy each.
 *
 * A label is its lines, title first (the title font), then body lines;
 * each is elided to max_width as layout/text.h measures it. What the
 * pool hands out stays valid, unchanged, as long as the pool lives: the
 * layout owns it, and the scenes it builds hold the layout. Thread-safe:
 * layouts are computed on worker threads, several at once when one was
 * cancelled. */
#pragma once

#include <cairo.h>
#include <glib.h>

G_BEGIN_DECLS

typedef struct _GraftLabelPool GraftLabelPool;

typedef struct {
  char **lines;            /* fitted, NULL-terminated, owned by the pool */
  double width, height;    /* the box that shows them, padding included (graft_label_box_size()) */
} GraftPooledLabel;

GraftLabelPool *graft_label_pool_new (double max_width);
void graft_label_pool_free (GraftLabelPool *pool);

/* The label whose unfitted lines are texts (char*), measured on measure
 * when the pool has not seen it yet. */
const GraftPooledLabel *graft_label_pool_fit (GraftLabelPool *pool, GPtrArray *texts, cairo_t *measure);

/* text, stored once: an edge's shape label ("batch×16"); NULL for NULL. */
const char *graft_label_pool_intern (GraftLabelPool *pool, const char *text);


G_DEFINE_AUTOPTR_CLEANUP_FUNC (GraftLabelPool, graft_label_pool_free)

G_END_DECLS
