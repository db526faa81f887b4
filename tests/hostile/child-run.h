/* Runs a hostile case in a child process and measures it: a crash, a
 * hang or a runaway allocation then fails one case instead of the whole
 * test program, and the peak memory is the child's own (wait4). */
#pragma once

#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib.h>
#include "../test-sanitized.h"

/* ASan's shadow memory and quarantine and its slower code get room. */
#define TIME_FACTOR (SANITIZED ? 6 : 1)
#define MEMORY_SLACK_MB (SANITIZED ? 700 : 0)

typedef struct {
  int exit_status;     /* the child's exit status */
  char *message;       /* what body returned: the error, "" on success */
  double seconds;      /* wall time */
  double peak_mb;      /* peak resident memory */
} GraftChildOutcome;

/* The error message of the case, or NULL when it succeeded. */
typedef char *(*GraftChildBody) (gconstpointer data);

/* Runs body (data) in a child that exits 1 with an error, 0 without; a
 * child still running after alarm_seconds dies of SIGALRM. A child that
 * dies of a signal fails the test, naming what (name) and which signal. */
static inline void
graft_test_run_in_child (const char *name, GraftChildBody body, gconstpointer data, guint alarm_seconds,
                         GraftChildOutcome *outcome)
{
  int pipe_fds[2];
  g_assert_cmpint (pipe (pipe_fds), ==, 0);
  gint64 start = g_get_monotonic_time ();
  pid_t pid = fork ();

  g_assert_cmpint (pid, >=, 0);
  if (pid == 0)
    {
      close (pipe_fds[0]);
      alarm (alarm_seconds);   /* a hang ends as SIGALRM, not as a stuck suite */
      g_autofree char *message = body (data);
      const char *text = message ? message : "";
      if (write (pipe_fds[1], text, strlen (text)) < 0)
        _exit (3);
      _exit (message ? 1 : 0);
    }
  close (pipe_fds[1]);
  GString *message = g_string_new (NULL);
  char buffer[4096];
  ssize_t n;
  while ((n = read (pipe_fds[0], buffer, sizeof buffer)) > 0)
    g_string_append_len (message, buffer, n);
  close (pipe_fds[0]);
  int status;
  struct rusage usage;
  g_assert_cmpint (wait4 (pid, &status, 0, &usage), ==, pid);
  outcome->seconds = (g_get_monotonic_time () - start) / 1e6;
  outcome->peak_mb = usage.ru_maxrss / 1024.0;
  outcome->message = g_string_free (message, FALSE);
  g_test_message ("%s: %.2f s, peak %.0f MiB: %s", name, outcome->seconds, outcome->peak_mb, outcome->message);
  if (WIFSIGNALED (status))
    g_error ("%s: the child died of signal %d (%s)", name, WTERMSIG (status), g_strsignal (WTERMSIG (status)));
  g_assert_true (WIFEXITED (status));
  outcome->exit_status = WEXITSTATUS (status);
}
