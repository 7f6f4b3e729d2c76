#!/usr/bin/env python3
"""Register contents for the virtual Pi's I²C chips (host side, Python 3 stdlib only).

The guest's bus is the kernel's i2c-stub (patched to take I2C_RDWR as well): plain memory,
256 byte registers per address, nothing moves unless someone writes it. This module says
what to write there so that the agent's drivers find a BMP280 at 0x76 and an MPU-9250 at
0x68 with its AK8963 at 0x0C, and what the agent must then publish.

    registers.py plan [--bmp280 FILE.json] --out DIR   i2c-load.txt, i2c-steps.txt, expected.json
    registers.py expect [--bmp280 FILE.json] --out FILE  expected.json only
    registers.py bmp280-json --out FILE                 an example FILE.json from the fixture
    registers.py selftest                               the BMP280 formulas against the fixture csv

File formats (blank lines and lines starting with # are comments):
    i2c-load.txt   ADDR REG HEXBYTES            0x76 0xf7 65 5a c0 7e ed 00
    i2c-steps.txt  SECONDS ADDR REG HEXBYTES    5 0x76 0xf7 65 5a c0 7e ed 00
HEXBYTES go to REG, REG+1, … (the chip auto-increments); SECONDS count from the start of
i2c-steps.sh. The guest applies them with i2c-load.sh / i2c-steps.sh.

What the agent's drivers do against these chips (read from Sources/, see README.md here):
  BMP280  reads ID 0xD0; writes 0xB6 to 0xE0 and polls STATUS 0xF3 bit 0 (im_update) until 0,
          ≤ 50 tries; reads 24 bytes at 0x88; writes ctrl_meas 0xF4 / config 0xF5 and reads
          ctrl_meas back (must equal what it wrote: memory does that); each sample reads 6
          bytes at 0xF7 (0x80000 in adc_T or adc_P means "no conversion yet").
  MPU9250 reads WHO_AM_I 0x75; writes PWR_MGMT_1 0x80 then (100 ms later) 0x01 without
          polling; SMPLRT_DIV, CONFIG, GYRO/ACCEL_CONFIG(2); USER_CTRL 0, INT_PIN_CFG 0x02
          (bypass); INT_ENABLE 1; FIFO_EN 0x23 = 0x78, USER_CTRL 0x6A = 0x00/0x04/0x40 (FIFO reset,
          on); every 0.1 s reads 2 bytes at 0x72 (FIFO_COUNT), then count/12 frames at 0x74
          (FIFO_R_W), <= 120 bytes per read (fifo pacing, the default); with [imu] fifo = false
          each sample reads 15 bytes at 0x3A (INT_STATUS + data).
  SHT4x   (no registers: one-byte commands, then a plain 6-byte read; on the stub a command
          byte only moves the pointer, so each answer sits at its command's number) sends 0x89
          and reads the serial number (two words, each with its CRC-8) at 0x89-0x8E; sends 0x94
          (soft reset), then 0xFD (measure, high precision) and reads 6 bytes from 0xFD, the
          pointer wrapping past 0xFF: T word and CRC at 0xFD-0xFF, RH word and CRC at 0x00-0x02.
  AK8963  reads WIA 0x00; writes CNTL2 0x0B = 0x01 (soft reset, not polled), CNTL1 0x0A =
          0x00 / 0x0F (fuse ROM) / 0x00 / 0x16; reads ASA 0x10–0x12; each sample reads 8 bytes
          at 0x02 (ST1 … ST2) and uses the data only if ST1 bit 0 (DRDY) = 1 and ST2 bit 3
          (HOFL) = 0.
"""

import argparse
import csv
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
FIXTURE = os.path.join(REPO, "Tests", "OSHCoreTests", "Fixtures", "baro", "bmp280_vectors.csv")

BMP280_ADDR, MPU_ADDR, AK_ADDR = 0x76, 0x68, 0x0C
SHT4X_ADDR = 0x44
SHT4X_SERIAL = (0x0F3A, 0x21C5)  # any two words: the driver checks only their CRCs

# The agent's constants (quoted from Sources/ so the expectations use the same numbers).
STANDARD_GRAVITY = 9.80665                       # IMUConvert.standardGravity
GYRO_COUNTS_PER_DPS = {250: 131.0, 500: 65.5, 1000: 32.8, 2000: 16.4}  # GyroRange.invensenseCountsPerDPS
AK8963_UT_PER_COUNT_16BIT = 0.15                 # IMUConvert.ak8963MicroteslaPerCount16
ISA_SCALE_M, ISA_EXPONENT, ISA_P0_HPA = 44330.77, 0.190263, 1013.25  # RelativeAltitude
PLAUSIBLE_HPA = (250.0, 1300.0)                  # RelativeAltitude.plausibleHPa
SKIPPED_ADC = 0x80000                            # BMx280Raw.skipped

# Default scene: the board at rest, turned 30° east of magnetic north, nose up 5°… in the
# agent's (Android) conventions: heading = device y clockwise from north, pitch > 0 when
# device y dips, roll > 0 when device x dips. Field: 20 µT north, 45 µT down (|B| ≈ 49 µT,
# dip 66°, central Europe).
DEFAULT_HEADING, DEFAULT_PITCH, DEFAULT_ROLL = 30.0, 5.0, 10.0
DEFAULT_FIELD_NORTH_UT, DEFAULT_FIELD_DOWN_UT = 20.0, 45.0
# Fuse-ROM sensitivity adjustment bytes (real parts read 0xA0–0xBF or so).
DEFAULT_ASA = (0xB0, 0xB4, 0xA5)
IMU_DIE_CELSIUS = 25.0

# The agent's FIFO pacing ([imu] fifo = true, the default) on a memory-only chip. The driver
# (MPUDriver.readFIFO) reads FIFO_COUNTH/L (0x72-0x73), then count/12 whole frames from
# FIFO_R_W (0x74), at most 10 frames (120 bytes) per I2C read (IMUFifoLayout.maxTransferBytes
# 128), each read starting at 0x74 again. On the stub the pointer auto-increments and nothing
# drains, so every read returns 0x74.. again: 10 copies of the frame there decode to the planned
# sample whatever the count, and the count never changes. It is set to what the chip would hold
# at each burst: 100 Hz x 0.1 s = 10 frames (a burst per 0.1 s: the magnetometer output's
# 10 Hz — the AK8963 has no FIFO, one read per burst — under the 0.25 s flush interval), so the times the agent reconstructs
# are 10 ms apart, as on a real chip. 0x75 inside the first frame is WHO_AM_I (0x71), which the
# driver reads at open: the frame's second byte (ACCEL_XOUT_L) must be 0x71, so the accel x
# count is chosen with that low byte (imu_design).
FIFO_FRAME_BYTES = 12            # IMUFifoFrames.invensense: ACCEL_X/Y/Z then GYRO_X/Y/Z, big-endian
FIFO_FRAMES_PER_BURST = 10       # count register: 10 * 12 = 120 bytes
FIFO_FRAMES_PER_TRANSFER = 10    # 128 // 12
MPU_WHO_AM_I = 0x71

# Fixture rows used without --bmp280: the datasheet-example calibration set, the rows whose
# values look like weather (900–1100 hPa, −10…45 °C), in case order. Case 0 is the datasheet's
# own worked example (1006.53 hPa, 25.08 °C).
DEFAULT_CALIB_SET = "datasheet_example"


# --------------------------------------------------------------------------------------------
# Hex helpers


def parse_hex(text):
    """'70 6b 43' / '706b43' / '0x70,0x6b' -> [0x70, 0x6b, 0x43]."""
    digits = ""
    for token in text.replace(",", " ").replace(":", " ").split():
        t = token[2:] if token.lower().startswith("0x") else token
        digits += t
    if len(digits) % 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError("not hex bytes: %r" % text)
    return [int(digits[i:i + 2], 16) for i in range(0, len(digits), 2)]


def hexbytes(bs):
    return " ".join("%02x" % b for b in bs)


def s16(lo, hi):
    v = lo | hi << 8
    return v - 0x10000 if v & 0x8000 else v


# --------------------------------------------------------------------------------------------
# BMP280 compensation, written from BST-BMP280-DS001 §3.11.3 (integer) and §8.1/§8.2


def bmp280_calibration(regs):
    """The 12 trimming words from registers 0x88…0x9F (little-endian; T1, P1 unsigned)."""
    if len(regs) != 24:
        raise ValueError("BMP280 calibration is 24 bytes (0x88-0x9F), got %d" % len(regs))
    u = [regs[i] | regs[i + 1] << 8 for i in range(0, 24, 2)]
    s = [s16(regs[i], regs[i + 1]) for i in range(0, 24, 2)]
    return {"T1": u[0], "T2": s[1], "T3": s[2], "P1": u[3], "P2": s[4], "P3": s[5], "P4": s[6],
            "P5": s[7], "P6": s[8], "P7": s[9], "P8": s[10], "P9": s[11]}


def _trunc_int32(x):
    """C's (int32_t) cast of a double (the agent saturates instead of UB; same in range)."""
    if not math.isfinite(x):
        return 0
    return max(-2147483648, min(2147483647, int(x)))


def bmp280_double(c, adc_t, adc_p):
    """Datasheet §8.1 floating-point formulas, in the datasheet's operation order (so IEEE
    doubles give the same bits as any other faithful implementation). Returns
    (celsius, pascal, t_fine as the datasheet truncates it)."""
    var1 = (adc_t / 16384.0 - c["T1"] / 1024.0) * c["T2"]
    var2 = ((adc_t / 131072.0 - c["T1"] / 8192.0) * (adc_t / 131072.0 - c["T1"] / 8192.0)) * c["T3"]
    t_fine = _trunc_int32(var1 + var2)
    celsius = (var1 + var2) / 5120.0

    var1 = t_fine / 2.0 - 64000.0
    var2 = var1 * var1 * c["P6"] / 32768.0
    var2 = var2 + var1 * c["P5"] * 2.0
    var2 = var2 / 4.0 + c["P4"] * 65536.0
    var1 = (c["P3"] * var1 * var1 / 524288.0 + c["P2"] * var1) / 524288.0
    var1 = (1.0 + var1 / 32768.0) * c["P1"]
    if var1 == 0.0:
        return celsius, 0.0, t_fine
    p = 1048576.0 - adc_p
    p = (p - var2 / 4096.0) * 6250.0 / var1
    var1 = c["P9"] * p * p / 2147483648.0
    var2 = p * c["P8"] / 32768.0
    p = p + (var1 + var2 + c["P7"]) / 16.0
    return celsius, p, t_fine


def _wrap(v, bits):
    m = 1 << bits
    v &= m - 1
    return v - m if v >> (bits - 1) else v


def _cdiv(a, b):
    """C division: truncation toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def bmp280_int(c, adc_t, adc_p):
    """Datasheet §3.11.3: 32-bit temperature, 64-bit pressure (Q24.8 Pa), and §8.2's 32-bit
    pressure (Pa). Two's-complement wrapping, `>>` rounding toward −∞, `/` toward zero.
    Returns (t_fine, centi_celsius, pressure_q24_8, pressure_int32_pa)."""
    w32 = lambda v: _wrap(v, 32)
    w64 = lambda v: _wrap(v, 64)
    t1, t2, t3 = c["T1"], c["T2"], c["T3"]
    var1 = w32(w32((adc_t >> 3) - (t1 << 1)) * t2) >> 11
    d = (adc_t >> 4) - t1
    var2 = w32((w32(d * d) >> 12) * t3) >> 14
    t_fine = w32(var1 + var2)
    centi = w32(t_fine * 5 + 128) >> 8

    # 64-bit pressure
    var1 = t_fine - 128000
    var2 = w64(var1 * var1 * c["P6"])
    var2 = w64(var2 + w64(var1 * c["P5"] << 17))
    var2 = w64(var2 + (c["P4"] << 35))
    var1 = w64((w64(var1 * var1 * c["P3"]) >> 8) + w64(var1 * c["P2"] << 12))
    var1 = w64(((1 << 47) + var1) * c["P1"]) >> 33
    if var1 == 0:
        q24_8 = 0
    else:
        p = 1048576 - adc_p
        p = _cdiv(w64((w64(p << 31) - var2) * 3125), var1)
        p = w64(p)
        var1 = w64(c["P9"] * (p >> 13) * (p >> 13)) >> 25
        var2 = w64(c["P8"] * p) >> 19
        q24_8 = (w64(p + var1 + var2) >> 8) + (c["P7"] << 4)
        q24_8 &= 0xFFFFFFFF

    # 32-bit pressure (§8.2)
    var1 = (t_fine >> 1) - 64000
    var2 = w32((w32((var1 >> 2) * (var1 >> 2)) >> 11) * c["P6"])
    var2 = w32(var2 + w32(w32(var1 * c["P5"]) << 1))
    var2 = w32((var2 >> 2) + (c["P4"] << 16))
    var1 = w32(w32(c["P3"] * (w32((var1 >> 2) * (var1 >> 2)) >> 13)) >> 3) + (w32(c["P2"] * var1) >> 1)
    var1 = w32(var1) >> 18
    var1 = w32((32768 + var1) * c["P1"]) >> 15
    if var1 == 0:
        p32 = 0
    else:
        p = (((1048576 - adc_p) - (var2 >> 12)) * 3125) & 0xFFFFFFFF
        v1u = var1 & 0xFFFFFFFF
        if p < 0x80000000:
            p = ((p << 1) & 0xFFFFFFFF) // v1u
        else:
            p = (p // v1u) * 2
        p &= 0xFFFFFFFF
        var1 = w32(c["P9"] * w32(((p >> 3) * (p >> 3)) >> 13)) >> 12
        var2 = w32(w32(p >> 2) * c["P8"]) >> 13
        p32 = (w32(p) + (w32(var1 + var2 + c["P7"]) >> 4)) & 0xFFFFFFFF
    return t_fine, centi, q24_8, p32


def bmp280_burst(adc_t, adc_p):
    """Registers 0xF7…0xFC for 20-bit adc_P, adc_T (xlsb low nibbles 0)."""
    return [adc_p >> 12 & 0xFF, adc_p >> 4 & 0xFF, adc_p << 4 & 0xF0,
            adc_t >> 12 & 0xFF, adc_t >> 4 & 0xFF, adc_t << 4 & 0xF0]


def bmp280_adc(burst):
    """(adc_T, adc_P) as the agent decodes a burst (BMx280Raw: xlsb bits 7:4 only)."""
    adc_p = burst[0] << 12 | burst[1] << 4 | burst[2] >> 4
    adc_t = burst[3] << 12 | burst[4] << 4 | burst[5] >> 4
    return adc_t, adc_p


def pressure_altitude(hpa):
    """RelativeAltitude.pressureAltitude: ISA altitude (m) of a pressure."""
    return ISA_SCALE_M * (1 - math.pow(hpa / ISA_P0_HPA, ISA_EXPONENT))


# --------------------------------------------------------------------------------------------
# SHT4x, written from Sensirion's SHT4x datasheet (version 6.6) §4.5 (conversion) and §4.4 (CRC)


def sht4x_crc(msb, lsb):
    """CRC-8: polynomial 0x31, initial 0xFF, no reflection, no final XOR."""
    crc = 0xFF
    for byte in (msb, lsb):
        crc ^= byte
        for _ in range(8):
            crc = ((crc << 1) ^ 0x31) & 0xFF if crc & 0x80 else (crc << 1) & 0xFF
    return crc


def sht4x_word(v):
    return [v >> 8, v & 0xFF, sht4x_crc(v >> 8, v & 0xFF)]


def sht4x_celsius(ticks):
    return -45 + 175 * ticks / 65535


def sht4x_percent(ticks):
    """Cropped to 0-100 %RH, as the datasheet says."""
    return min(max(-6 + 125 * ticks / 65535, 0.0), 100.0)


def read_fixture(path=FIXTURE):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def selftest(path=FIXTURE, out=sys.stdout):
    if sht4x_crc(0xBE, 0xEF) != 0x92:  # the datasheet's example
        out.write("selftest: SHT4x CRC(0xBEEF) = 0x%02x, not 0x92\n" % sht4x_crc(0xBE, 0xEF))
        return 1
    return selftest_bmp280(path, out)


def selftest_bmp280(path=FIXTURE, out=sys.stdout):
    """Checks both formula variants against every fixture row. Returns the number of failures."""
    rows = read_fixture(path)
    bad = 0
    worst = {"T": 0.0, "P": 0.0}
    for r in rows:
        c = bmp280_calibration(parse_hex(r["regs_0x88_0x9F_hex"]))
        adc_t, adc_p = int(r["adc_T"]), int(r["adc_P"])
        t, p, tf = bmp280_double(c, adc_t, adc_p)
        ti, centi, q, p32 = bmp280_int(c, adc_t, adc_p)
        problems = []
        # The csv prints 10 decimals: agree to half a unit in the last place (plus the
        # decimal -> double rounding of the printed value). Bosch's API double code is the
        # same formula clamped to -40...85 degC and 300...1100 hPa; the datasheet's (and the
        # agent's) does not clamp.
        for col, v, tol in (("ds_T_double_degC", t, 5.1e-11), ("ds_P_double_pa", p, 5.1e-11),
                            ("api_T_double_degC", min(max(t, -40.0), 85.0), 5.1e-11),
                            ("api_P_double_pa", min(max(p, 30000.0), 110000.0), 5.1e-11)):
            d = abs(v - float(r[col]))
            if col.startswith("ds_"):
                key = "T" if "_T_" in col else "P"
                worst[key] = max(worst[key], d)
            if d > tol + 1e-15 * abs(v):
                problems.append("%s %r vs %s" % (col, v, r[col]))
        for col, v in (("ds_t_fine_double", tf), ("ds_t_fine_int", ti), ("ds_T_int32_centideg", centi),
                       ("ds_P_int64_q24_8", q), ("ds_P_int32_pa", p32)):
            if int(r[col]) != v:
                problems.append("%s %d vs %s" % (col, v, r[col]))
        if problems:
            bad += 1
            out.write("case %s: %s\n" % (r["case"], "; ".join(problems)))
    out.write("BMP280 formulas vs %s: %d rows, %d mismatching (double: max |dT| %.2g degC, max |dP| %.2g Pa)\n"
              % (os.path.relpath(path), len(rows), bad, worst["T"], worst["P"]))
    return bad


# --------------------------------------------------------------------------------------------
# IMU: rotations in the agent's conventions


def mat_mul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def mat_vec(a, v):
    return [sum(a[i][k] * v[k] for k in range(3)) for i in range(3)]


def transpose(a):
    return [[a[j][i] for j in range(3)] for i in range(3)]


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def normalized(v):
    n = norm(v)
    return [x / n for x in v] if n > 0 else None


def rot_x(a):
    c, s = math.cos(a), math.sin(a)
    return [[1, 0, 0], [0, c, -s], [0, s, c]]


def rot_y(a):
    c, s = math.cos(a), math.sin(a)
    return [[c, 0, s], [0, 1, 0], [-s, 0, c]]


def rot_z(a):
    c, s = math.cos(a), math.sin(a)
    return [[c, -s, 0], [s, c, 0], [0, 0, 1]]


def device_to_enu(heading_deg, pitch_deg, roll_deg):
    """Device → ENU matrix whose AndroidOrientation angles are the given ones:
    R = Rz(−heading)·Rx(−pitch)·Ry(roll) (checked by android_angles below)."""
    d = math.pi / 180
    return mat_mul(mat_mul(rot_z(-heading_deg * d), rot_x(-pitch_deg * d)), rot_y(roll_deg * d))


def quat_from_matrix(m):
    """Quaternion(matrix:) in Sources/OSHCore/Fusion/Vector3.swift (Shepperd), normalised; (w,x,y,z)."""
    t = m[0][0] + m[1][1] + m[2][2]
    if t > 0:
        s = math.sqrt(t + 1) * 2
        q = (s / 4, (m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s)
    elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = math.sqrt(1 + m[0][0] - m[1][1] - m[2][2]) * 2
        q = ((m[2][1] - m[1][2]) / s, s / 4, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s)
    elif m[1][1] > m[2][2]:
        s = math.sqrt(1 + m[1][1] - m[0][0] - m[2][2]) * 2
        q = ((m[0][2] - m[2][0]) / s, (m[0][1] + m[1][0]) / s, s / 4, (m[1][2] + m[2][1]) / s)
    else:
        s = math.sqrt(1 + m[2][2] - m[0][0] - m[1][1]) * 2
        q = ((m[1][0] - m[0][1]) / s, (m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, s / 4)
    n = math.sqrt(sum(x * x for x in q))
    return tuple(x / n for x in q)


def quat_matrix(q):
    w, x, y, z = q
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]


def android_angles(q):
    """AndroidOrientation (OrientationFilter.swift): w ≥ 0; heading atan2(R01, R11),
    pitch asin(−R21), roll atan2(−R20, R22), degrees. Returns ((x, y, z, w), h, p, r)."""
    n = math.sqrt(sum(x * x for x in q))
    w, x, y, z = (v / n for v in q)
    if w < 0:
        w, x, y, z = -w, -x, -y, -z
    r = quat_matrix((w, x, y, z))
    deg = 180 / math.pi
    return ((x, y, z, w), math.atan2(r[0][1], r[1][1]) * deg,
            math.asin(min(max(-r[2][1], -1), 1)) * deg, math.atan2(-r[2][0], r[2][2]) * deg)


def attitude(accel, mag):
    """OrientationFilter.attitude: up = accel, east = mag × up, north = up × east; rows of the
    device → world matrix are the world axes in device coordinates."""
    up = normalized(accel)
    east = normalized(cross(mag, up))
    n = cross(up, east)
    return quat_from_matrix([east, n, up])


def madgwick_check(q, accel, mag, beta=0.1, dt=0.01, steps=3000):
    """Runs the agent's Madgwick step (Filters.swift) with zero gyro from q and returns the
    angle (degrees) it moved: 0 means q is the filter's resting point for these vectors."""
    def gradient(q, d, s):
        r = quat_matrix(q)
        f = [x - y for x, y in zip(mat_vec(transpose(r), d), s)]
        w, x, y, z = q
        dw = [[0, -2 * z, 2 * y], [2 * z, 0, -2 * x], [-2 * y, 2 * x, 0]]
        dx = [[0, 2 * y, 2 * z], [2 * y, -4 * x, -2 * w], [2 * z, 2 * w, -4 * x]]
        dy = [[-4 * y, 2 * x, 2 * w], [2 * x, 0, 2 * z], [-2 * w, 2 * z, -4 * y]]
        dz = [[-4 * z, -2 * w, 2 * x], [2 * w, -4 * z, 2 * y], [2 * x, 2 * y, 0]]
        return tuple(sum(fi * gi for fi, gi in zip(f, mat_vec(transpose(m), d))) for m in (dw, dx, dy, dz))

    a, m = normalized(accel), normalized(mag)
    q0 = q
    for _ in range(steps):
        h = mat_vec(quat_matrix(q), m)
        b = [0, math.sqrt(h[0] ** 2 + h[1] ** 2), h[2]]
        s1 = gradient(q, [0, 0, 1], a)
        s2 = gradient(q, b, m)
        step = [u + v for u, v in zip(s1, s2)]
        n = math.sqrt(sum(x * x for x in step))
        step = [x * beta / n for x in step] if n > 1e-12 else [0, 0, 0, 0]
        q = tuple(qi - si * dt for qi, si in zip(q, step))
        nq = math.sqrt(sum(x * x for x in q))
        q = tuple(x / nq for x in q)
    dot = abs(sum(x * y for x, y in zip(q, q0)))
    return 2 * math.acos(min(dot, 1)) * 180 / math.pi


def int16_bytes_be(v):
    return [(v >> 8) & 0xFF, v & 0xFF]


def int16_bytes_le(v):
    return [v & 0xFF, (v >> 8) & 0xFF]


def clamp16(v):
    return max(-32768, min(32767, v))


def imu_design(heading, pitch, roll, accel_range_g=4, gyro_range_dps=500, gyro_dps=(0.0, 0.0, 0.0),
               field_north=DEFAULT_FIELD_NORTH_UT, field_down=DEFAULT_FIELD_DOWN_UT, asa=DEFAULT_ASA):
    """Registers for an MPU-9250 + AK8963 at rest in the given attitude, and what they mean
    to the agent. Counts are rounded up or down per axis, choosing the combination whose
    implied attitude is closest to the requested angles."""
    r = device_to_enu(heading, pitch, roll)
    rt = transpose(r)
    accel_g = mat_vec(rt, [0, 0, 1])                      # specific force: +1 g up
    field = mat_vec(rt, [0, field_north, -field_down])     # ENU field in device axes, µT
    counts_per_g = 32768.0 / accel_range_g
    adj = [(a - 128) * 0.5 / 128 + 1 for a in asa]         # IMUConvert.ak8963Adjustment
    scale = [AK8963_UT_PER_COUNT_16BIT * k for k in adj]   # µT per count, AK8963 axes
    # The driver publishes (ak.y·sy, ak.x·sx, −ak.z·sz) in the MPU frame (ak8963ToMPU9250).
    ak_ideal = [field[1] / scale[0], field[0] / scale[1], -field[2] / scale[2]]
    acc_ideal = [a * counts_per_g for a in accel_g]

    def meaning(acc_counts, ak_counts):
        a = [c * STANDARD_GRAVITY / counts_per_g for c in acc_counts]
        m = [ak_counts[1] * scale[1], ak_counts[0] * scale[0], -ak_counts[2] * scale[2]]
        return a, m

    best = None
    for bits in range(1 << 6):
        # accel: rounding both ways per axis; the mag: both ways per axis
        acc = [math.floor(v) + (bits >> i & 1) for i, v in enumerate(acc_ideal)]
        # ACCEL_XOUT_L sits at 0x75 (WHO_AM_I) in the FIFO region: the two nearest counts with that low byte
        below = math.floor((acc_ideal[0] - MPU_WHO_AM_I) / 256) * 256 + MPU_WHO_AM_I
        acc[0] = below + 256 * (bits & 1)
        ak = [math.floor(v) + (bits >> (3 + i) & 1) for i, v in enumerate(ak_ideal)]
        a, m = meaning(acc, ak)
        _, h, p, ro = android_angles(attitude(a, m))
        err = max(abs((h - heading + 180) % 360 - 180), abs(p - pitch), abs(ro - roll))
        g_err = abs(norm(a) - STANDARD_GRAVITY)
        key = (round(err, 9), g_err)
        if best is None or key < best[0]:
            best = (key, acc, ak)
    _, acc, ak = best
    acc = [clamp16(v) for v in acc]
    ak = [clamp16(v) for v in ak]
    gyro_counts = [clamp16(round(v * GYRO_COUNTS_PER_DPS[gyro_range_dps])) for v in gyro_dps]
    temp_counts = clamp16(round((IMU_DIE_CELSIUS - 21) * 333.87))
    return {"accel_counts": acc, "gyro_counts": gyro_counts, "temp_counts": temp_counts, "ak_counts": ak,
            "asa": list(asa), "mag_scale": scale, "accel_range_g": accel_range_g, "gyro_range_dps": gyro_range_dps,
            "target": {"heading_deg": heading, "pitch_deg": pitch, "roll_deg": roll,
                       "field_enu_uT": [0.0, field_north, -field_down]}}


def imu_meaning(d):
    """What the agent publishes for the designed registers (mounting identity, no mag calibration)."""
    counts_per_g = 32768.0 / d["accel_range_g"]
    a = [c * (STANDARD_GRAVITY / counts_per_g) for c in d["accel_counts"]]       # invensenseAccelScale
    gscale = (math.pi / 180) / GYRO_COUNTS_PER_DPS[d["gyro_range_dps"]]          # invensenseGyroScale
    g = [c * gscale for c in d["gyro_counts"]]
    s, k = d["mag_scale"], d["ak_counts"]
    m = [k[1] * s[1], k[0] * s[0], -(k[2] * s[2])]                                # ak8963ToMPU9250
    q = attitude(a, m)
    (qx, qy, qz, qw), h, p, r = android_angles(q)
    return a, g, m, (qx, qy, qz, qw), h, p, r, q


# --------------------------------------------------------------------------------------------
# The plan


def choose_fixture_rows(rows, cases=None):
    ds = [r for r in rows if r["calib_set"] == DEFAULT_CALIB_SET]
    if cases is not None:
        by_case = {r["case"]: r for r in rows}
        missing = [c for c in cases if c not in by_case]
        if missing:
            raise SystemExit("registers.py: no fixture row with case %s" % ", ".join(missing))
        picked = [by_case[c] for c in cases]
        if len({r["regs_0x88_0x9F_hex"] for r in picked}) != 1:
            raise SystemExit("registers.py: the chosen cases use different calibration sets; a chip has one")
        return picked
    out = []
    for r in ds:
        p, t = float(r["ds_P_double_pa"]) / 100, float(r["ds_T_double_degC"])
        if 900 <= p <= 1100 and -10 <= t <= 45:
            out.append(r)
    return out


def load_bmp280_json(path):
    with open(path) as f:
        j = json.load(f)
    try:
        cal = parse_hex(j["calibration"])
        raw = parse_hex(j["raw"])
    except (KeyError, TypeError, ValueError) as e:
        raise SystemExit("registers.py: %s: want {\"calibration\": \"<24 bytes hex from 0x88>\", "
                         "\"raw\": \"<6 bytes hex from 0xF7>\"} (%s)" % (path, e))
    if len(cal) != 24 or len(raw) != 6:
        raise SystemExit("registers.py: %s: calibration must be 24 bytes and raw 6, got %d and %d"
                         % (path, len(cal), len(raw)))
    return cal, raw


def bmp280_sample(cal_bytes, burst, label, at_s):
    c = bmp280_calibration(cal_bytes)
    adc_t, adc_p = bmp280_adc(burst)
    t, pa, tf = bmp280_double(c, adc_t, adc_p)
    ti, centi, q, p32 = bmp280_int(c, adc_t, adc_p)
    hpa = pa / 100
    notes = []
    if adc_t == SKIPPED_ADC or adc_p == SKIPPED_ADC:
        notes.append("adc_T or adc_P is 0x80000, which the driver reads as 'no conversion yet': nothing is published")
    elif not (PLAUSIBLE_HPA[0] <= hpa <= PLAUSIBLE_HPA[1]):
        notes.append("outside RelativeAltitude.plausibleHPa 250...1300: BarometerInput skips the sample, nothing is published")
    return {"from_s": at_s, "source": label, "raw_hex": hexbytes(burst), "adc_T": adc_t, "adc_P": adc_p,
            "pressure_hPa": hpa, "pressure_Pa": pa, "temperature_C": t, "t_fine": tf,
            "integer_datasheet": {"t_fine": ti, "T_centideg": centi, "P_q24_8": q, "P_q24_8_as_Pa": q / 256.0,
                                  "P_int32_Pa": p32},
            "published": not notes, "notes": notes}


def build(args):
    """Everything plan/expect need: load lines, step lines, the expectation dict."""
    if selftest(out=open(os.devnull, "w")) != 0:
        raise SystemExit("registers.py: the BMP280 formulas disagree with the fixture csv; run `registers.py selftest`")
    load, steps = [], []

    # ---- BMP280
    samples = []
    if args.bmp280:
        cal, raw = load_bmp280_json(args.bmp280)
        try:
            c = bmp280_calibration(cal)
        except ValueError as e:
            raise SystemExit("registers.py: %s" % e)
        if len(set(cal)) == 1 or c["T1"] == 0 or c["P1"] == 0:
            raise SystemExit("registers.py: %s: the driver refuses this calibration (constant bytes, or dig_T1/dig_P1 = 0)"
                             % args.bmp280)
        samples.append(bmp280_sample(cal, raw, os.path.basename(args.bmp280), 0))
        bursts = [raw]
    else:
        rows = choose_fixture_rows(read_fixture(args.fixture), args.cases.split(",") if args.cases else None)
        cal = parse_hex(rows[0]["regs_0x88_0x9F_hex"])
        bursts = []
        for i, r in enumerate(rows):
            burst = bmp280_burst(int(r["adc_T"]), int(r["adc_P"]))
            s = bmp280_sample(cal, burst, "fixture case %s" % r["case"], i * args.interval)
            # the fixture's own columns, to show the agreement
            s["fixture"] = {"ds_T_double_degC": float(r["ds_T_double_degC"]), "ds_P_double_pa": float(r["ds_P_double_pa"])}
            samples.append(s)
            bursts.append(burst)
    load.append("# BMP280 at 0x%02x: chip id (0xD0), calibration 0x88-0x9F, status 0xF3 = 0 (no NVM copy, not measuring), data 0xF7-0xFC" % BMP280_ADDR)
    load.append("0x%02x 0xd0 58" % BMP280_ADDR)
    load.append("0x%02x 0x88 %s" % (BMP280_ADDR, hexbytes(cal)))
    load.append("0x%02x 0xf3 00" % BMP280_ADDR)
    load.append("0x%02x 0xf7 %s" % (BMP280_ADDR, hexbytes(bursts[0])))
    for s, burst in zip(samples[1:], bursts[1:]):
        steps.append("%d 0x%02x 0xf7 %s" % (s["from_s"], BMP280_ADDR, hexbytes(burst)))
    ref = next((s for s in samples if s["published"]), None)
    for s in samples:
        if s["published"] and ref is not None:
            s["relativeAltitude_m"] = pressure_altitude(s["pressure_hPa"]) - pressure_altitude(ref["pressure_hPa"])
        else:
            s["relativeAltitude_m"] = None

    # ---- MPU-9250 + AK8963
    gyro = [float(x) for x in args.gyro_dps.split(",")]
    d = imu_design(args.heading, args.pitch, args.roll, args.accel_range, args.gyro_range, gyro,
                   args.field_north, args.field_down)
    a, g, m, quat, h, p, r, q_wxyz = imu_meaning(d)
    data = []
    for v in d["accel_counts"]:
        data += int16_bytes_be(v)
    data += int16_bytes_be(d["temp_counts"])
    for v in d["gyro_counts"]:
        data += int16_bytes_be(v)
    ak = []
    for v in d["ak_counts"]:
        ak += int16_bytes_le(v)
    load.append("# MPU-9250 at 0x%02x: WHO_AM_I 0x75, PWR_MGMT_1 0x6B = 0x01 (its power-on value), then one line 0x3A-0x48:" % MPU_ADDR)
    load.append("# INT_STATUS = 0x01 (DATA_RDY_INT, stays set), ACCEL_XOUT_H..ZOUT_L, TEMP_OUT, GYRO_XOUT_H..ZOUT_L (big-endian)")
    load.append("0x%02x 0x75 71" % MPU_ADDR)
    load.append("0x%02x 0x6b 01" % MPU_ADDR)
    load.append("0x%02x 0x3a 01 %s" % (MPU_ADDR, hexbytes(data)))
    frame = data[:6] + data[8:14]      # the FIFO frame: accel and gyro, no temperature
    assert len(frame) == FIFO_FRAME_BYTES and frame[1] == MPU_WHO_AM_I, "ACCEL_XOUT_L must read as WHO_AM_I"
    fifo_count = FIFO_FRAMES_PER_BURST * FIFO_FRAME_BYTES
    load.append("# FIFO (fifo pacing): FIFO_COUNTH/L 0x72-0x73 = %d (%d frames), then %d copies of the 12-byte frame"
                % (fifo_count, FIFO_FRAMES_PER_BURST, FIFO_FRAMES_PER_TRANSFER))
    load.append("# from FIFO_R_W 0x74 (0x75 = WHO_AM_I 71 is the frame's ACCEL_XOUT_L); every FIFO read returns these")
    load.append("0x%02x 0x72 %s" % (MPU_ADDR, hexbytes([fifo_count >> 8, fifo_count & 0xFF] + frame * FIFO_FRAMES_PER_TRANSFER)))
    load.append("# AK8963 at 0x%02x (always answers on the stub, bypass or not): WIA 0x00, then 0x02-0x09:" % AK_ADDR)
    load.append("# ST1 = 0x01 (DRDY, stays set), HXL..HZH (little-endian), ST2 = 0x10 (BITM 16-bit, HOFL 0); fuse ROM ASA 0x10-0x12")
    load.append("0x%02x 0x00 48" % AK_ADDR)
    load.append("0x%02x 0x02 01 %s 10" % (AK_ADDR, hexbytes(ak)))
    load.append("0x%02x 0x10 %s" % (AK_ADDR, hexbytes(d["asa"])))

    # ---- SHT4x: the late chip (the board loads it, then hides it until 20 s after the agent starts)
    t_ticks = int(round((args.sht4x_celsius + 45) * 65535 / 175))
    rh_ticks = int(round((args.sht4x_percent + 6) * 65535 / 125))
    if not (0 <= t_ticks <= 65535 and 0 <= rh_ticks <= 65535):
        raise SystemExit("registers.py: --sht4x-celsius/--sht4x-percent outside what the chip can report")
    measurement = sht4x_word(t_ticks) + sht4x_word(rh_ticks)
    load.append("# SHT4x at 0x%02x: the serial number's answer at 0x89 (command 0x89), the measurement's at 0xFD" % SHT4X_ADDR)
    load.append("# (command 0xFD), T word and CRC at 0xFD-0xFF, RH word and CRC at 0x00-0x02 (the pointer wraps)")
    load.append("0x%02x 0x89 %s" % (SHT4X_ADDR, hexbytes(sht4x_word(SHT4X_SERIAL[0]) + sht4x_word(SHT4X_SERIAL[1]))))
    load.append("0x%02x 0xfd %s" % (SHT4X_ADDR, hexbytes(measurement[:3])))
    load.append("0x%02x 0x00 %s" % (SHT4X_ADDR, hexbytes(measurement[3:])))

    drift = madgwick_check(q_wxyz, a, m)
    still = all(c == 0 for c in d["gyro_counts"])
    dps = 180 / math.pi
    expected = {
        "generated_by": "board/virtual-pi/i2c/registers.py " + " ".join(sys.argv[1:]),
        "agent_config_assumed": {
            "i2c.bus": "the stub's bus (0 when it is the only adapter)",
            "imu.accel_range": d["accel_range_g"], "imu.gyro_range": d["gyro_range_dps"],
            "imu.mounting": "+x,+y,+z", "orientation.north": "magnetic",
            "orientation.algorithm": "madgwick (mahony converges to the same attitude)",
            "orientation.mag_offset/mag_matrix": "not set (identity)",
            "outputs.barometer.rate": "any (default 1 Hz)",
        },
        "barometer": {
            "chip": "BMP280", "address": "0x%02x" % BMP280_ADDR,
            "formula": "BST-BMP280-DS001 section 8.1, double precision (what BMx280Driver.read uses: "
                       "BMP280Calibration.temperature/pressurePa); t_fine truncated to int before the pressure formula",
            "published_fields": {"pressure": "hPa = pressure_Pa / 100", "relativeAltitude":
                                 "m, ISA altitude of this sample minus that of the agent's first good sample "
                                 "(44330.77*(1-(p/1013.25)^0.190263)); values below assume the first sample "
                                 "is samples[0]; temperature is not published (osh-edge probe --dump and decode show it)"},
            "tolerance": {"pressure_hPa": 1e-6, "relativeAltitude_m": 1e-4, "temperature_C": 1e-6},
            "tolerance_note": "the agent computes the same double formula in the same order: expect the same "
                              "digits; the tolerances only absorb JSON printing and libm pow() differences",
            "calibration_hex": hexbytes(cal),
            "calibration": bmp280_calibration(cal),
            "samples": samples,
            "schedule_note": ("raw registers fixed for the whole run (--bmp280)" if args.bmp280 else
                              "samples[i] holds from from_s seconds after i2c-steps.sh starts until the next; "
                              "a published value must be one of samples[].pressure_hPa, in this order"),
        },
        "hygrometer": {
            "chip": "SHT4x", "address": "0x%02x" % SHT4X_ADDR,
            "formula": "SHT4x datasheet 4.5: T = -45 + 175 * S_T / 65535 degC, RH = -6 + 125 * S_RH / 65535 %RH "
                       "cropped to 0-100; every word's CRC-8 (0x31, init 0xFF) checked",
            "ticks": {"temperature": t_ticks, "humidity": rh_ticks},
            "measurement_hex": hexbytes(measurement),
            "temperature_C": sht4x_celsius(t_ticks), "humidity_percent": sht4x_percent(rh_ticks),
            "tolerance": {"temperature_C": 1e-4, "humidity_percent": 1e-4},
            "tolerance_note": "float32 on the wire",
            "late": "absent (the stub NACKs 0x%02x) from boot until 20 s after the agent started, in the first boot"
                    % SHT4X_ADDR,
        },
        "imu": {
            "chip": "MPU9250", "address": "0x%02x" % MPU_ADDR, "magnetometer": "AK8963 at 0x%02x" % AK_ADDR,
            "registers": {"accel_counts": d["accel_counts"], "temp_counts": d["temp_counts"],
                          "gyro_counts": d["gyro_counts"], "ak8963_counts_hx_hy_hz": d["ak_counts"],
                          "ak8963_asa": d["asa"]},
            "scales": {"accel_m_s2_per_count": STANDARD_GRAVITY / (32768.0 / d["accel_range_g"]),
                       "gyro_rad_s_per_count": (math.pi / 180) / GYRO_COUNTS_PER_DPS[d["gyro_range_dps"]],
                       "mag_uT_per_count_ak_xyz": d["mag_scale"],
                       "ak8963_to_mpu_frame": "(x, y, z)_mpu = (hy*sy, hx*sx, -hz*sz)"},
            "accelerometer_m_s2": a, "accelerometer_norm_g": norm(a) / STANDARD_GRAVITY,
            "gyroscope_rad_s": g,
            "magnetometer_uT": m, "magnetometer_norm_uT": norm(m),
            "die_temperature_C": d["temp_counts"] / 333.87 + 21,
            "target": d["target"],
            "orientation": {
                "quat_orientation_data": {"qx": quat[0], "qy": quat[1], "qz": quat[2], "q0": quat[3],
                                          "note": "device -> ENU (x east, y north, z up), magnetic north, scalar last "
                                                  "on the wire, q0 >= 0; float32 on the wire"},
                "euler_orientation_data": {"heading": h, "pitch": p, "roll": r,
                                           "note": "degrees, Android getOrientation: heading = device y clockwise "
                                                   "from magnetic north (east = +90), pitch > 0 when device y dips, "
                                                   "roll > 0 when device x dips; float32 on the wire"},
                "tolerance": ({"angle_deg": 0.05, "quaternion_component": 5e-4} if still else
                              {"angle_deg": 0.25, "quaternion_component": 3e-3}),
                "tolerance_note": ("zero gyro: the filter starts on this attitude (OrientationFilter initialises "
                                   "from the first accel+mag sample) and stays there exactly, its gradient being 0 "
                                   "(the python re-run of the Madgwick step moved %.2g deg in 30 s); the tolerance "
                                   "only covers float32 output" % drift) if still else
                                  ("non-zero gyro: until the stillness detector has learnt the bias (first 1-s block) "
                                   "the attitude drifts, then Madgwick's fixed-size step (beta*dt = 0.1 rad/s * 10 ms) "
                                   "keeps it chattering within about +-0.12 deg of this attitude; judge samples "
                                   "published 2 s or more after start"),
            },
            "fifo": {"count_bytes": FIFO_FRAMES_PER_BURST * FIFO_FRAME_BYTES, "frames_per_burst": FIFO_FRAMES_PER_BURST,
                     "burst_interval_s": FIFO_FRAMES_PER_BURST / 100.0,
                     "note": "fifo pacing: every burst decodes to this same sample, 21 of them 10 ms apart; the "
                             "magnetometer is read once per burst, so it is new on each burst's last sample"},
            "published_each_sample": "accelerometer, gyroscope, magnetometer (ST1.DRDY stays 1, so every "
                                     "sample is a new magnetometer sample) exactly as above",
        },
    }
    return load, steps, expected


def write_lines(path, header, lines):
    with open(path, "w") as f:
        for h in header:
            f.write("# %s\n" % h)
        for l in lines:
            f.write(l + "\n")


def cmd_plan(args):
    load, steps, expected = build(args)
    os.makedirs(args.out, exist_ok=True)
    write_lines(os.path.join(args.out, "i2c-load.txt"),
                ["ADDR REG HEXBYTES: apply with i2c-load.sh BUS FILE (generated by registers.py plan)"], load)
    hdr = ["SECONDS ADDR REG HEXBYTES: run with i2c-steps.sh BUS FILE; SECONDS from the script's start"]
    if args.bmp280:
        hdr.append("no steps: --bmp280 keeps the BMP280 raw registers fixed, the IMU is static")
    write_lines(os.path.join(args.out, "i2c-steps.txt"), hdr, steps)
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")
    b = expected["barometer"]["samples"]
    o = expected["imu"]["orientation"]["euler_orientation_data"]
    sys.stderr.write("wrote %s/{i2c-load.txt,i2c-steps.txt,expected.json}: %d BMP280 sample(s) %s hPa; "
                     "heading %.3f pitch %.3f roll %.3f deg; SHT4x %.4f degC %.4f %%RH\n"
                     % (args.out, len(b), ", ".join("%.4f" % s["pressure_hPa"] for s in b), o["heading"], o["pitch"], o["roll"],
                        expected["hygrometer"]["temperature_C"], expected["hygrometer"]["humidity_percent"]))
    for s in b:
        for n in s["notes"]:
            sys.stderr.write("warning: %s: %s\n" % (s["source"], n))


def cmd_expect(args):
    _, _, expected = build(args)
    d = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(d, exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(expected, f, indent=2)
        f.write("\n")


def cmd_bmp280_json(args):
    rows = read_fixture(args.fixture)
    by_case = {r["case"]: r for r in rows}
    r = by_case.get(args.case)
    if r is None:
        raise SystemExit("registers.py: no fixture row with case %s" % args.case)
    j = {"calibration": r["regs_0x88_0x9F_hex"],
         "raw": "".join("%02x" % b for b in bmp280_burst(int(r["adc_T"]), int(r["adc_P"])))}
    with open(args.out, "w") as f:
        json.dump(j, f, indent=2)
        f.write("\n")
    sys.stderr.write("wrote %s (fixture case %s: %.4f hPa, %.4f degC)\n"
                     % (args.out, args.case, float(r["ds_P_double_pa"]) / 100, float(r["ds_T_double_degC"])))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="registers.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def scene(p):
        p.add_argument("--bmp280", metavar="FILE.json", help="fixed BMP280 calibration + raw (no BMP280 steps)")
        p.add_argument("--fixture", default=FIXTURE, help="bmp280_vectors.csv (default: the repository's)")
        p.add_argument("--cases", help="fixture cases to step through, comma-separated (one calibration set); "
                                       "default: the datasheet set's weather-like rows")
        p.add_argument("--interval", type=int, default=5, help="seconds between BMP280 steps (default 5)")
        p.add_argument("--heading", type=float, default=DEFAULT_HEADING)
        p.add_argument("--pitch", type=float, default=DEFAULT_PITCH)
        p.add_argument("--roll", type=float, default=DEFAULT_ROLL)
        p.add_argument("--field-north", type=float, default=DEFAULT_FIELD_NORTH_UT, help="horizontal field, uT")
        p.add_argument("--field-down", type=float, default=DEFAULT_FIELD_DOWN_UT, help="vertical field (down), uT")
        p.add_argument("--accel-range", type=int, choices=[2, 4, 8, 16], default=4, help="must equal [imu] accel_range")
        p.add_argument("--gyro-range", type=int, choices=[250, 500, 1000, 2000], default=500, help="must equal [imu] gyro_range")
        p.add_argument("--gyro-dps", default="0,0,0", help="constant gyro reading, deg/s (default 0,0,0)")
        p.add_argument("--sht4x-celsius", type=float, default=21.5, help="the SHT4x's air temperature (default 21.5)")
        p.add_argument("--sht4x-percent", type=float, default=48.0, help="the SHT4x's relative humidity (default 48)")

    p = sub.add_parser("plan", help="write i2c-load.txt, i2c-steps.txt and expected.json into --out DIR")
    scene(p)
    p.add_argument("--out", required=True, metavar="DIR")
    p.set_defaults(func=cmd_plan)
    p = sub.add_parser("expect", help="write expected.json only")
    scene(p)
    p.add_argument("--out", required=True, metavar="FILE")
    p.set_defaults(func=cmd_expect)
    p = sub.add_parser("bmp280-json", help="write an example bmp280.json from the fixture")
    p.add_argument("--out", required=True, metavar="FILE")
    p.add_argument("--case", default="0", help="fixture case (default 0: the datasheet's worked example)")
    p.add_argument("--fixture", default=FIXTURE)
    p.set_defaults(func=cmd_bmp280_json)
    p = sub.add_parser("selftest", help="check the BMP280 formulas against the fixture csv")
    p.add_argument("--fixture", default=FIXTURE)
    p.set_defaults(func=lambda a: sys.exit(1 if selftest(a.fixture) else 0))
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
