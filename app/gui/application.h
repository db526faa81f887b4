/* The Graft application: one window per opened model, settings and the
 * path of the bundled sample. */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define GRAFT_TYPE_APPLICATION (graft_application_get_type ())
G_DECLARE_FINAL_TYPE (GraftApplication, graft_application, GRAFT, APPLICATION, AdwApplication)

GraftApplication *graft_application_new (void);

/* NULL when the schema is neither installed nor in the build tree; the
 * windows then use the schema's defaults without saving them. */
GSettings *graft_application_get_settings (GraftApplication *self);

/* The bundled sample model: in the source tree when running from the
 * build tree, else in GRAFT_DATADIR/samples. */
char *graft_application_dup_sample_path (GraftApplication *self);

G_END_DECLS
