#include "ir/group.h"
#include "ir/graph.h"

#include <string.h>

static GraftGroup *
group_new (GraftGroup *parent, const char *name)
{
  GraftGroup *group = g_new0 (GraftGroup, 1);

  group->name = g_strdup (name);
  group->parent = parent;
  if (parent == NULL || parent->parent == NULL)
    group->path = g_strdup (name);
  else
    group->path = g_strconcat (parent->path, ".", name, NULL);
  group->children = g_ptr_array_new_with_free_func ((GDestroyNotify) graft_group_free);
  group->nodes = g_ptr_array_new ();
  group->child_by_name = g_hash_table_new (g_str_hash, g_str_equal);
  return group;
}

GraftGroup *
graft_group_new_root (void)
{
  return group_new (NULL, "");
}

void
graft_group_free (GraftGroup *group)
{
  if (group == NULL)
    return;
  g_hash_table_unref (group->child_by_name);
  g_ptr_array_unref (group->children);
  g_ptr_array_unref (group->nodes);
  g_free (group->name);
  g_free (group->path);
  g_free (group->class_name);
  g_free (group);
}

GraftGroup *
graft_group_ensure_child (GraftGroup *group, const char *name)
{
  GraftGroup *child = g_hash_table_lookup (group->child_by_name, name);

  if (child == NULL)
    {
      child = group_new (group, name);
      g_ptr_array_add (group->children, child);
      g_hash_table_insert (group->child_by_name, child->name, child);
    }
  return child;
}

GraftGroup *
graft_group_ensure_path (GraftGroup *root, const char *const *components, guint n_components)
{
  GraftGroup *group = root;

  for (guint i = 0; i < n_components; i++)
    group = graft_group_ensure_child (group, components[i]);
  return group;
}

GraftGroup *
graft_group_find_path (GraftGroup *root, const char *path)
{
  g_auto(GStrv) parts = NULL;
  GraftGroup *group = root;

  if (path == NULL || *path == '\0')
    return root;
  parts = g_strsplit (path, ".", -1);
  for (guint i = 0; parts[i] && group; i++)
    group = g_hash_table_lookup (group->child_by_name, parts[i]);
  return group;
}

void
graft_group_add_node (GraftGroup *group, GraftNode *node)
{
  g_return_if_fail (node->group == NULL);
  node->group = group;
  g_ptr_array_add (group->nodes, node);
}

guint
graft_group_get_depth (const GraftGroup *group)
{
  guint depth = 0;

  for (; group && group->parent; group = group->parent)
    depth++;
  return depth;
}

const char *
graft_group_component_for_scope (const char *scope, const char *parent_scope)
{
  gsize len = strlen (parent_scope);

  if (len > 0 && strncmp (scope, parent_scope, len) == 0 && scope[len] == '.' && scope[len + 1] != '\0')
    return scope + len + 1;
  return scope;
}
