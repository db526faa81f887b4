/* When GRAFT_TEST_REPORT names a file, the app appends "key=value" lines
 * to it describing what the window displays, read back by tests/gui. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

gboolean graft_test_report_enabled (void);
void graft_test_report (const char *key, const char *format, ...) G_GNUC_PRINTF (2, 3);

G_END_DECLS
