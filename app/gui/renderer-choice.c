#include "renderer-choice.h"

#include <string.h>
#include <epoxy/gl.h>

char *
graft_renderer_dup_gl_name (GdkDisplay *display)
{
  g_autoptr(GdkGLContext) context = NULL;
  g_autoptr(GError) error = NULL;
  const char *name;
  char *copy;

  if (display == NULL)
    return NULL;
  context = gdk_display_create_gl_context (display, &error);
  if (context == NULL || !gdk_gl_context_realize (context, &error))
    return NULL;
  gdk_gl_context_make_current (context);
  name = (const char *) glGetString (GL_RENDERER);
  copy = g_strdup (name);
  gdk_gl_context_clear_current ();
  return copy;
}

gboolean
graft_renderer_gl_is_software (const char *gl_name)
{
  /* Mesa's software rasterizers and the ones drivers fall back to. */
  static const char *software[] = { "llvmpipe", "softpipe", "swrast", "software rasterizer", "SWR" };
  g_autofree char *lower = NULL;

  if (gl_name == NULL)
    return FALSE;
  lower = g_ascii_strdown (gl_name, -1);
  for (gsize i = 0; i < G_N_ELEMENTS (software); i++)
    {
      g_autofree char *needle = g_ascii_strdown (software[i], -1);

      if (strstr (lower, needle) != NULL)
        return TRUE;
    }
  return FALSE;
}

const char *
graft_renderer_choose (GdkDisplay *display)
{
  g_autofree char *gl_name = NULL;

  if (g_getenv ("GSK_RENDERER") != NULL)
    return NULL;
  gl_name = graft_renderer_dup_gl_name (display);
  if (!graft_renderer_gl_is_software (gl_name))
    return NULL;
  g_debug ("OpenGL is %s (software): drawing with cairo", gl_name);
  g_setenv ("GSK_RENDERER", "cairo", FALSE);
  return "cairo";
}
