"""A luisa-python program with a 100-line kernel of structs and vectors (a sphere lit by
two lights over a checkered floor), timed: the first call compiles it. The checker uses
``& 1``, not ``% 2``, on possibly negative ints: luisa-python's ``%`` truncates as C does,
luisa_nb's follows Python. The checksums agree to a few parts in a thousand, except where
a ray grazes the sphere (a discriminant of zero in exact arithmetic: at 16x8, pixel
(9, 5)); there the two compilers' float rounding decides hit or miss.

    python luisa_shading.py BACKEND WIDTH HEIGHT REPEATS
"""

import sys
import time

import numpy as np

import luisa
from luisa.mathtypes import *

backend, width, height, repeats = sys.argv[1], *map(int, sys.argv[2:5])
luisa.init(backend, support_gui=False)
Material = luisa.StructType(albedo=float3, roughness=float, emission=float3)
Ray = luisa.StructType(origin=float3, direction=float3)
Light = luisa.StructType(position=float3, color=float3)
image = luisa.Buffer(width * height, float4)


@luisa.func
def shade(time_of_day):
    p = dispatch_id().xy
    uv = (float2(p) + 0.5) / float2(width, height) * 2.0 - 1.0
    uv.x *= width / height
    ray = Ray()
    ray.origin = float3(0.0, 0.0, -3.0)
    ray.direction = normalize(float3(uv, 1.5))
    material = Material()
    material.albedo = float3(0.8, 0.35, 0.2)
    material.roughness = 0.4
    material.emission = float3(0.0)
    key = Light()
    key.position = float3(cos(time_of_day) * 4.0, 3.0, sin(time_of_day) * 4.0 - 2.0)
    key.color = float3(1.0, 0.95, 0.85)
    fill = Light()
    fill.position = float3(-3.0, 1.0, -4.0)
    fill.color = float3(0.2, 0.25, 0.35)
    center = float3(0.0, 0.0, 0.0)
    radius = 1.0
    oc = ray.origin - center
    b = dot(oc, ray.direction)
    c = dot(oc, oc) - radius * radius
    discriminant = b * b - c
    color = float3(0.05, 0.06, 0.08) * (1.0 - 0.3 * uv.y)
    if discriminant > 0.0:
        t = -b - sqrt(discriminant)
        if t > 0.0:
            hit = ray.origin + ray.direction * t
            normal = normalize(hit - center)
            view = -ray.direction
            total = material.emission
            for index in range(2):
                light = key
                if index == 1:
                    light = fill
                to_light = light.position - hit
                distance_to_light = length(to_light)
                direction = to_light / distance_to_light
                diffuse = max(dot(normal, direction), 0.0)
                halfway = normalize(direction + view)
                shininess = 2.0 / max(material.roughness * material.roughness, 0.001) - 2.0
                specular = pow(max(dot(normal, halfway), 0.0), shininess)
                fresnel = 0.04 + 0.96 * pow(1.0 - max(dot(halfway, view), 0.0), 5.0)
                attenuation = 1.0 / (1.0 + 0.05 * distance_to_light * distance_to_light)
                lit = material.albedo * diffuse + float3(specular * fresnel)
                total += lit * light.color * attenuation * 4.0
            rim = pow(1.0 - max(dot(normal, view), 0.0), 3.0)
            total += float3(0.1, 0.15, 0.25) * rim
            ground = 0.5 + 0.5 * normal.y
            ambient = lerp(float3(0.08, 0.06, 0.05), float3(0.1, 0.12, 0.16), ground)
            color = total + ambient * material.albedo
    if ray.direction.y < -0.001:
        floor_t = (-1.0 - ray.origin.y) / ray.direction.y
        sphere_first = discriminant > 0.0 and -b - sqrt(max(discriminant, 0.0)) < floor_t
        if not sphere_first:
            point = ray.origin + ray.direction * floor_t
            checker = (int(floor(point.x * 2.0)) + int(floor(point.z * 2.0))) & 1
            floor_albedo = lerp(float3(0.25), float3(0.75), float(checker))
            to_key = normalize(key.position - point)
            shadow_oc = point - center
            shadow_b = dot(shadow_oc, to_key)
            shadow_c = dot(shadow_oc, shadow_oc) - radius * radius
            shadow_discriminant = shadow_b * shadow_b - shadow_c
            visible = 1.0
            if shadow_discriminant > 0.0 and -shadow_b - sqrt(shadow_discriminant) > 0.0:
                visible = 0.2
            lambert = max(to_key.y, 0.0)
            fog = exp(-0.04 * floor_t * floor_t)
            floor_color = floor_albedo * (lambert * visible * key.color + float3(0.08))
            color = lerp(color, floor_color, fog)
    mapped = color / (color + float3(1.0))
    gamma = float3(1.0 / 2.2)
    final = float3(pow(mapped.x, gamma.x), pow(mapped.y, gamma.y), pow(mapped.z, gamma.z))
    vignette = 1.0 - 0.25 * dot(uv, uv) / 2.0
    final = clamp(final * vignette, 0.0, 1.0)
    luminance = dot(final, float3(0.2126, 0.7152, 0.0722))
    saturation = 1.1
    final = lerp(float3(luminance), final, saturation)
    final = clamp(final, 0.0, 1.0)
    dither = fract(sin(dot(float2(p), float2(12.9898, 78.233))) * 43758.5453) / 255.0
    final = final + float3(dither)
    image.write(p.y * width + p.x, float4(final, 1.0))


start = time.perf_counter()
shade(0.5, dispatch_size=(width, height))
first_call = time.perf_counter() - start
luisa.synchronize()
first = time.perf_counter() - start
times, calls, cpu_times = [], [], []
for _ in range(repeats):
    start, cpu_start = time.perf_counter(), time.process_time()
    shade(0.5, dispatch_size=(width, height))
    calls.append(time.perf_counter() - start)
    luisa.synchronize()
    times.append(time.perf_counter() - start)
    cpu_times.append(time.process_time() - cpu_start)
compile_time = first_call - min(calls)
pixels = np.empty(width * height * 4, np.float32)
image.copy_to(pixels)
checksum = pixels.sum()
print(
    f"first {first:.6f} compile {compile_time:.6f} best {min(times):.6f} "
    f"cpu {min(cpu_times):.6f} checksum {checksum:.3f}"
)
