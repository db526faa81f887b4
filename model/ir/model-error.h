/* The error domain of everything that reads or writes a model file, and
 * the progress callback of long loads. In ir/ so the readers, the writer
 * and layout/ can use them without depending on the loader above them. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define GRAFT_MODEL_ERROR (graft_model_error_quark ())
GQuark graft_model_error_quark (void);

typedef enum {
  GRAFT_MODEL_ERROR_IO,            /* cannot read the file */
  GRAFT_MODEL_ERROR_TRUNCATED,     /* file ends early */
  GRAFT_MODEL_ERROR_MALFORMED,     /* not a valid file of its format */
  GRAFT_MODEL_ERROR_UNSUPPORTED,   /* recognised but not loadable: the message says what it is and what to do */
  GRAFT_MODEL_ERROR_UNSAFE,        /* refused for safety: external data outside the model folder, hostile sizes */
  GRAFT_MODEL_ERROR_CANCELLED,
} GraftModelError;

/* Called with a fraction in [0, 1]. */
typedef void (*GraftProgressFunc) (double fraction, gpointer user_data);

G_END_DECLS
