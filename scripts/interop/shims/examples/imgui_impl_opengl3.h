/* See imgui_impl_glfw.h beside this file. */
#pragma once
#include <imgui_impl_opengl3.h>
