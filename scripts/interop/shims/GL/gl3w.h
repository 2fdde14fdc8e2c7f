/* RECAST3D loads OpenGL through gl3w, which Debian does not package; GLEW (libglew-dev) loads the
 * same core-profile functions. gl3wInit returns 0 on success, like gl3w's. */
#pragma once
#include <GL/glew.h>

static inline int gl3wInit(void) {
  glewExperimental = GL_TRUE; /* core profiles: load every entry point the driver has */
  return glewInit() == GLEW_OK ? 0 : -1;
}
