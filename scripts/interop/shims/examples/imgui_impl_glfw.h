/* RECAST3D includes Dear ImGui's backends from the examples/ folder of its bundled ImGui; Debian's
 * libimgui-dev has them under backends/. */
#pragma once
#include <imgui_impl_glfw.h>
