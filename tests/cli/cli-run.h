/* Runs the built graft-cli and keeps what it said, for the CLI tests. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  int status;   /* exit status */
  char *out;
  char *err;
} Run;

void run_clear (Run *run);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Run, run_clear)

/* BUILD/app/graft-cli args…; fails the test if it cannot be run or dies of
 * a signal. */
void run_cli (Run *run, const char *const *args);

G_END_DECLS
