// The 3D view: the reconstruction box, every slice as a textured plane, the preview volume as a
// maximum-intensity projection. As in RECAST3D, dragging a slice moves it along its normal and
// dragging it near an edge rotates it about the opposite edge; dragging elsewhere turns the view.
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
import {
  add, clampTranslation, closestOnLine, cross, dot, normal, parts, pointAt, rotateAbout, scale,
  sub, translate,
} from './orientation.js';

// Colours here are display values, as the colour maps' are: no colour management.
THREE.ColorManagement.enabled = false;

// A press this close to a slice's edge (fraction of its side) rotates it instead of moving it.
const EDGE_FRACTION = 0.12;
const SLICE_COLOURS = { 0: 0xe5533d, 1: 0x4caf50, 2: 0x3f7fe0 };
// New images re-render the view at most this often (the preview's ray casting is the costly
// part, on software WebGL above all); moving the view or a slice re-renders at once.
const DATA_RENDER_INTERVAL_MS = 200;
// The preview is ray cast at this fraction of the view's resolution (a low-resolution volume:
// a quarter of the fragments, the same picture) and drawn behind the slices.
const PREVIEW_RESOLUTION = 0.5;
const OTHER_COLOUR = 0xf0c030;

const MIP_VERTEX = /* glsl */ `
  out vec3 worldPosition;
  void main() {
    vec4 world = modelMatrix * vec4(position, 1.0);
    worldPosition = world.xyz;
    gl_Position = projectionMatrix * viewMatrix * world;
  }`;

const MIP_FRAGMENT = /* glsl */ `
  precision highp float;
  precision highp sampler3D;
  uniform sampler3D volume;
  uniform sampler2D lut;
  uniform vec3 boxMin;
  uniform vec3 boxMax;
  uniform float opacity;
  in vec3 worldPosition;
  out highp vec4 colour;
  void main() {
    vec3 direction = normalize(worldPosition - cameraPosition);
    vec3 t0 = (boxMin - cameraPosition) / direction;
    vec3 t1 = (boxMax - cameraPosition) / direction;
    vec3 near = min(t0, t1);
    vec3 far = max(t0, t1);
    float enter = max(max(max(near.x, near.y), near.z), 0.0);
    float leave = min(min(far.x, far.y), far.z);
    if (leave <= enter) discard;
    const int STEPS = 96;
    float step = (leave - enter) / float(STEPS);
    float brightest = 0.0;
    for (int i = 0; i < STEPS; i++) {
      vec3 p = cameraPosition + direction * (enter + (float(i) + 0.5) * step);
      brightest = max(brightest, texture(volume, (p - boxMin) / (boxMax - boxMin)).r);
    }
    if (brightest <= 0.0) discard;
    float alpha = brightest * opacity;
    colour = vec4(texture(lut, vec2(brightest, 0.5)).rgb * alpha, alpha);  // premultiplied
  }`;

export class VolumeView {
  // callbacks: onDrag(id, orientation, pointerTime), onDragEnd(id, orientation)
  constructor(container, callbacks) {
    this.callbacks = callbacks;
    this.container = container;
    this.slices = new Map();  // id -> {mesh, outline, texture, orientation}
    this.box = null;
    this.drag = null;
    this.renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
    this.renderer.setPixelRatio(window.devicePixelRatio || 1);
    // The colour maps already hold display values: no colour space conversion on the way out.
    this.renderer.outputColorSpace = THREE.LinearSRGBColorSpace;
    container.append(this.renderer.domElement);
    this.scene = new THREE.Scene();
    this.background = new THREE.Color(0x14171c);
    this.renderer.setClearColor(this.background, 1);
    this.camera = new THREE.PerspectiveCamera(35, 1, 0.1, 1e6);
    this.camera.up.set(0, 0, 1);
    this.raycaster = new THREE.Raycaster();
    const canvas = this.renderer.domElement;
    // Registered before OrbitControls' own listener, so that a press on a slice disables them.
    canvas.addEventListener('pointerdown', (e) => this.pointerDown(e));
    canvas.addEventListener('pointermove', (e) => this.pointerMove(e));
    canvas.addEventListener('pointerup', (e) => this.pointerUp(e));
    canvas.addEventListener('pointercancel', (e) => this.pointerUp(e));
    this.controls = new OrbitControls(this.camera, canvas);
    this.controls.addEventListener('change', () => this.requestRender(true));
    this.lutTexture = new THREE.DataTexture(new Uint8Array(256 * 4), 256, 1, THREE.RGBAFormat);
    // The preview's own scene, ray cast into a smaller target, then laid under the slices.
    this.renderer.autoClear = false;
    this.previewScene = new THREE.Scene();
    this.previewTarget = new THREE.WebGLRenderTarget(1, 1);
    this.overlayCamera = new THREE.OrthographicCamera(-1, 1, 1, -1, 0, 1);
    // The target holds premultiplied colours: blended as such (the material must not multiply
    // by alpha again).
    this.overlay = new THREE.Mesh(new THREE.PlaneGeometry(2, 2), new THREE.MeshBasicMaterial({
      map: this.previewTarget.texture, transparent: true, blending: THREE.CustomBlending,
      blendSrc: THREE.OneFactor, blendDst: THREE.OneMinusSrcAlphaFactor,
      depthTest: false, depthWrite: false,
    }));
    this.overlay.position.z = -0.5;  // between the overlay camera's near and far planes
    new ResizeObserver(() => this.resize()).observe(container);
    this.resize();
  }

  resize() {
    const width = Math.max(1, this.container.clientWidth);
    const height = Math.max(1, this.container.clientHeight);
    this.renderer.setSize(width, height, true);
    const buffer = this.renderer.getDrawingBufferSize(new THREE.Vector2());
    this.previewTarget.setSize(Math.max(1, Math.round(buffer.x * PREVIEW_RESOLUTION)),
      Math.max(1, Math.round(buffer.y * PREVIEW_RESOLUTION)));
    this.camera.aspect = width / height;
    this.camera.updateProjectionMatrix();
    // setSize cleared the canvas: draw again in the next frame, not after the data throttle (the
    // view would stay blank meanwhile, e.g. when the lost-connection banner takes its height).
    this.requestRender(true);
  }

  // `now`: for the user's own moves; otherwise (new data) at most every DATA_RENDER_INTERVAL_MS.
  requestRender(now = false) {
    if (this.frameRequested || (this.renderTimer && !now)) return;
    const wait = now ? 0 : (this.lastRender ?? -Infinity) + DATA_RENDER_INTERVAL_MS - performance.now();
    if (wait > 0) {
      this.renderTimer = setTimeout(() => {
        this.renderTimer = null;
        this.requestRender(true);
      }, wait);
      return;
    }
    clearTimeout(this.renderTimer);
    this.renderTimer = null;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.lastRender = performance.now();
      this.render();
    });
  }

  render() {
    const renderer = this.renderer;
    renderer.setRenderTarget(null);
    renderer.clear();
    if (this.preview?.visible) {
      renderer.setRenderTarget(this.previewTarget);
      renderer.setClearColor(0x000000, 0);
      renderer.clear();
      renderer.render(this.previewScene, this.camera);
      renderer.setRenderTarget(null);
      renderer.setClearColor(this.background, 1);
      renderer.render(this.overlay, this.overlayCamera);
    }
    renderer.clearDepth();
    renderer.render(this.scene, this.camera);
  }

  setBox(box) {
    const same = this.box && box.min.every((v, i) => v === this.box.min[i]) &&
      box.max.every((v, i) => v === this.box.max[i]);
    this.box = box;
    if (same) return;
    if (this.boxLines) this.scene.remove(this.boxLines);
    const size = sub(box.max, box.min);
    const centre = scale(add(box.min, box.max), 0.5);
    const edges = new THREE.EdgesGeometry(new THREE.BoxGeometry(...size));
    this.boxLines = new THREE.LineSegments(edges, new THREE.LineBasicMaterial({ color: 0x8a94a6 }));
    this.boxLines.position.set(...centre);
    this.scene.add(this.boxLines);
    const radius = 0.5 * Math.hypot(...size);
    const distance = radius / Math.sin((this.camera.fov * Math.PI) / 360) * 0.9;
    const direction = new THREE.Vector3(1.1, -1.6, 0.9).normalize();
    this.camera.position.set(...centre).addScaledVector(direction, distance);
    this.camera.near = distance / 100;
    this.camera.far = distance * 100;
    this.camera.updateProjectionMatrix();
    this.controls.target.set(...centre);
    this.controls.update();
    if (this.preview) this.updatePreviewBox();
    this.requestRender();
  }

  setSlice(id, orientation) {
    let slice = this.slices.get(id);
    if (!slice) {
      const texture = new THREE.DataTexture(new Uint8Array([60, 60, 60, 255]), 1, 1, THREE.RGBAFormat);
      texture.needsUpdate = true;
      const geometry = new THREE.BufferGeometry();
      geometry.setAttribute('position', new THREE.Float32BufferAttribute(new Float32Array(12), 3));
      geometry.setAttribute('uv', new THREE.Float32BufferAttribute([0, 0, 1, 0, 1, 1, 0, 1], 2));
      geometry.setIndex([0, 1, 2, 0, 2, 3]);
      const mesh = new THREE.Mesh(geometry, new THREE.MeshBasicMaterial({
        map: texture, side: THREE.DoubleSide,
      }));
      mesh.userData.sliceId = id;
      const outline = new THREE.LineLoop(geometry, new THREE.LineBasicMaterial({
        color: SLICE_COLOURS[id] ?? OTHER_COLOUR,
      }));
      this.scene.add(mesh, outline);
      slice = { mesh, outline, texture };
      this.slices.set(id, slice);
    }
    slice.orientation = orientation;
    if (!this.box || this.box.provisional) this.frameSlices();
    const position = slice.mesh.geometry.getAttribute('position');
    [[0, 0], [1, 0], [1, 1], [0, 1]].forEach(([u, v], k) => {
      position.setXYZ(k, ...pointAt(orientation, u, v));
    });
    position.needsUpdate = true;
    slice.mesh.geometry.computeBoundingSphere();
    this.requestRender();
  }

  // Until the scan's box is known (the status follows the first images), the slices' bounding box
  // frames the view.
  frameSlices() {
    const corners = [...this.slices.values()].flatMap((s) => (s.orientation
      ? [[0, 0], [1, 0], [0, 1], [1, 1]].map(([u, v]) => pointAt(s.orientation, u, v)) : []));
    if (!corners.length) return;
    const min = [0, 1, 2].map((a) => Math.min(...corners.map((c) => c[a])));
    const max = [0, 1, 2].map((a) => Math.max(...corners.map((c) => c[a])));
    this.setBox({ min, max, provisional: true });
  }

  // `rgba` has row 0 of the slice (its bottom) first.
  setSliceImage(id, rgba, width, height) {
    const slice = this.slices.get(id);
    if (!slice) return;
    const image = slice.texture.image;
    if (image.width !== width || image.height !== height) {
      slice.texture.dispose();
      slice.texture = new THREE.DataTexture(rgba, width, height, THREE.RGBAFormat);
      slice.texture.magFilter = THREE.LinearFilter;
      slice.mesh.material.map = slice.texture;
      slice.mesh.material.needsUpdate = true;
    } else {
      image.data = rgba;
    }
    slice.texture.needsUpdate = true;
    this.requestRender();
  }

  removeSlice(id) {
    const slice = this.slices.get(id);
    if (!slice) return;
    this.scene.remove(slice.mesh, slice.outline);
    slice.texture.dispose();
    slice.mesh.geometry.dispose();
    this.slices.delete(id);
    this.requestRender();
  }

  setColormap(lut) {
    const data = this.lutTexture.image.data;
    for (let i = 0; i < 256; i++) {
      data[4 * i] = lut[3 * i];
      data[4 * i + 1] = lut[3 * i + 1];
      data[4 * i + 2] = lut[3 * i + 2];
      data[4 * i + 3] = 255;
    }
    this.lutTexture.needsUpdate = true;
    this.requestRender();
  }

  // The preview volume (x fastest, z slowest) shown through the contrast window [low, high].
  setPreview(values, size, box, low, high, visible) {
    const [sx, sy, sz] = size;
    const bytes = new Uint8Array(sx * sy * sz);
    const span = high > low ? high - low : 1;
    for (let i = 0; i < bytes.length; i++) {
      const v = (values[i] - low) / span;
      bytes[i] = v > 0 ? (v < 1 ? Math.round(v * 255) : 255) : 0;
    }
    if (!this.preview || this.previewSize.join() !== size.join()) {
      if (this.preview) {
        this.previewScene.remove(this.preview);
        this.preview.material.uniforms.volume.value.dispose();
      }
      const texture = new THREE.Data3DTexture(bytes, sx, sy, sz);
      texture.format = THREE.RedFormat;
      texture.type = THREE.UnsignedByteType;
      texture.minFilter = THREE.LinearFilter;
      texture.magFilter = THREE.LinearFilter;
      texture.unpackAlignment = 1;
      texture.needsUpdate = true;
      const material = new THREE.ShaderMaterial({
        glslVersion: THREE.GLSL3,
        vertexShader: MIP_VERTEX,
        fragmentShader: MIP_FRAGMENT,
        uniforms: {
          volume: { value: texture },
          lut: { value: this.lutTexture },
          boxMin: { value: new THREE.Vector3() },
          boxMax: { value: new THREE.Vector3() },
          opacity: { value: 0.55 },
        },
        side: THREE.BackSide,
        blending: THREE.NoBlending,
        depthTest: false,
        depthWrite: false,
      });
      this.preview = new THREE.Mesh(new THREE.BoxGeometry(1, 1, 1), material);
      this.previewScene.add(this.preview);
      this.previewSize = size;
    } else {
      const texture = this.preview.material.uniforms.volume.value;
      texture.image.data = bytes;
      texture.needsUpdate = true;
    }
    this.previewBox = box;
    this.updatePreviewBox();
    this.preview.visible = visible;
    this.requestRender();
  }

  setPreviewVisible(visible) {
    if (!this.preview) return;
    this.preview.visible = visible;
    this.requestRender();
  }

  updatePreviewBox() {
    const box = this.previewBox || this.box;
    const size = sub(box.max, box.min);
    this.preview.scale.set(...size);
    this.preview.position.set(...scale(add(box.min, box.max), 0.5));
    this.preview.material.uniforms.boxMin.value.set(...box.min);
    this.preview.material.uniforms.boxMax.value.set(...box.max);
  }

  // Client coordinates of the point at fractions (u, v) of slice `id` (tests, benchmarks).
  screenPoint(id, u, v) {
    const slice = this.slices.get(id);
    if (!slice) return null;
    const p = new THREE.Vector3(...pointAt(slice.orientation, u, v)).project(this.camera);
    const rect = this.renderer.domElement.getBoundingClientRect();
    return { x: rect.left + ((p.x + 1) / 2) * rect.width, y: rect.top + ((1 - p.y) / 2) * rect.height };
  }

  ray(event) {
    const rect = this.renderer.domElement.getBoundingClientRect();
    const ndc = new THREE.Vector2(((event.clientX - rect.left) / rect.width) * 2 - 1,
      -((event.clientY - rect.top) / rect.height) * 2 + 1);
    this.raycaster.setFromCamera(ndc, this.camera);
    return this.raycaster.ray;
  }

  hitSlice(event) {
    this.ray(event);
    const meshes = [...this.slices.values()].map((s) => s.mesh);
    const hits = this.raycaster.intersectObjects(meshes, false);
    return hits.length ? hits[0] : null;
  }

  pointerDown(event) {
    if (event.button !== 0) return;
    const hit = this.hitSlice(event);
    if (!hit) return;
    const id = hit.object.userData.sliceId;
    const orientation = this.slices.get(id).orientation;
    const grab = hit.point.toArray();
    const { u, v } = { u: hit.uv.x, v: hit.uv.y };
    const edge = Math.min(u, 1 - u, v, 1 - v);
    this.controls.enabled = false;
    this.renderer.domElement.setPointerCapture(event.pointerId);
    if (edge > EDGE_FRACTION) {
      this.drag = { id, mode: 'move', start: orientation, grab };
    } else {
      // Rotate about the opposite edge.
      const { xAxis, yAxis } = parts(orientation);
      let hinge;
      if (edge === u) hinge = { point: pointAt(orientation, 1, 0), axis: yAxis };
      else if (edge === 1 - u) hinge = { point: pointAt(orientation, 0, 0), axis: yAxis };
      else if (edge === v) hinge = { point: pointAt(orientation, 0, 1), axis: xAxis };
      else hinge = { point: pointAt(orientation, 0, 0), axis: xAxis };
      this.drag = { id, mode: 'rotate', start: orientation, grab, hinge };
    }
    event.stopImmediatePropagation();
  }

  pointerMove(event) {
    if (!this.drag) {
      const hit = this.hitSlice(event);
      let cursor = '';
      if (hit) {
        const { x: u, y: v } = hit.uv;
        cursor = Math.min(u, 1 - u, v, 1 - v) > EDGE_FRACTION ? 'move' : 'alias';
      }
      this.renderer.domElement.style.cursor = cursor;
      return;
    }
    const ray = this.ray(event);
    const origin = ray.origin.toArray();
    const direction = ray.direction.toArray();
    const { id, start, grab } = this.drag;
    let orientation;
    if (this.drag.mode === 'move') {
      const n = normal(start);
      let distance = closestOnLine(grab, n, origin, direction);
      if (this.box) distance = clampTranslation(start, distance, this.box);
      orientation = translate(start, distance);
    } else {
      const { point, axis } = this.drag.hinge;
      const k = scale(axis, 1 / Math.hypot(...axis));
      const across = dot(direction, k);
      if (Math.abs(across) < 1e-6) return;
      const s = dot(sub(grab, origin), k) / across;
      const now = add(origin, scale(direction, s));
      const perpendicular = (p) => {
        const r = sub(p, point);
        return sub(r, scale(k, dot(r, k)));
      };
      const a = perpendicular(grab);
      const b = perpendicular(now);
      const angle = Math.atan2(dot(cross(a, b), k), dot(a, b));
      orientation = rotateAbout(start, point, k, angle);
    }
    this.setSlice(id, orientation);
    this.requestRender(true);
    this.callbacks.onDrag(id, orientation, event.timeStamp);
  }

  pointerUp(event) {
    if (!this.drag) return;
    const { id } = this.drag;
    this.drag = null;
    this.controls.enabled = true;
    if (this.renderer.domElement.hasPointerCapture(event.pointerId)) {
      this.renderer.domElement.releasePointerCapture(event.pointerId);
    }
    this.callbacks.onDragEnd(id, this.slices.get(id)?.orientation);
  }
}
