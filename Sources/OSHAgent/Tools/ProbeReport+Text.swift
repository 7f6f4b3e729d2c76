#if canImport(Glibc)
import Glibc
#endif
import OSHCore
import OSHPlatform

extension ProbeReport {
    /// For a terminal.
    public var table: String {
        var out: [String] = ["I²C"]
        if let h = i2cHint { out.append("  " + h) }
        for b in buses {
            if let e = b.error { out.append("  /dev/i2c-\(b.number): \(e)"); continue }
            out.append("  /dev/i2c-\(b.number)" + (b.chips.isEmpty && b.unidentified.isEmpty ? ": no known chip answered" : ""))
            for c in b.chips {
                let id: String
                if let r = c.idRegister, c.identifiedByID {
                    id = "id \(Probe.hex(r))=\(Probe.hex(c.idValue ?? 0))"
                } else {
                    id = c.identifiedByID ? "by a command's answer" : "by address only"
                }
                out.append("    \(Probe.hex(c.address))  \(c.name.padded(9)) \(c.kind.rawValue.padded(13)) \(id)")
                if !c.note.isEmpty { out.append("          \(c.note)") }
            }
            for u in b.unidentified {
                out.append("    \(Probe.hex(u.address))  unknown chip: " + u.reads.joined(separator: "; "))
            }
            for f in b.faults { out.append("    bus fault: \(f)") }
            for n in b.notDone { out.append("    \(n)") }
            for d in b.barometerDumps {
                out.append("    dump \(d.identity.name) at \(Probe.hex(d.address))")
                out.append("      calibration  \(d.calibrationHex.isEmpty ? "-" : d.calibrationHex)")
                out.append("      data burst   \(d.rawHex)")
                out.append("      osh-edge decode \(d.identity.name) \(d.calibrationHex.isEmpty ? "-" : d.calibrationHex) \(d.rawHex)")
                if let r = d.decoded { out += r.table.split(separator: "\n").map { "      " + $0 } }
                if let e = d.error { out.append("      error: \(e)") }
            }
        }
        out.append("")
        out.append("Audio capture (ALSA)")
        if audio.isEmpty { out.append("  none") }
        for a in audio { out.append("  \(a.name)  \(a.description)") }
        out.append("")
        out.append("Serial ports (GPS)")
        if serialPorts.isEmpty {
            out.append(
                "  none: on a Raspberry Pi enable the UART (enable_uart=1 in /boot/firmware/config.txt, or raspi-config → "
                    + "Interface Options → Serial Port), or plug in a USB receiver")
        }
        for p in serialPorts {
            var line = "  " + SerialPortDiagnostics.display(path: p.path, device: p.device)
            if p.device == nil { line += "  (points nowhere)" }
            if !p.holders.isEmpty { line += "  held by " + p.holders.map(\.description).joined(separator: ", ") }
            if p.holders.contains(where: \.isGetty) { line += ": a login console, not free for a GPS" }
            out.append(line)
        }
        out.append(
            "gpsd: "
                + (gpsdAnswers
                    ? "answers on 127.0.0.1:2947 ([gps] gpsd = \"127.0.0.1:2947\" reads it)"
                    : "nothing answers on 127.0.0.1:2947"))
        out.append("")
        out.append("Video (V4L2)")
        if video.isEmpty { out.append("  none") }
        let boardModel = video.contains { $0.role == .camera } ? BoardIdentity.readModel() : nil
        for v in video {
            out.append("  \(v.path)  \(v.role.rawValue)  \(v.card) (\(v.driver))")
            if !v.note.isEmpty { out.append("    not usable: \(v.note)") }
            for f in v.formats {
                let sizes =
                    f.isRange ? f.sizes.map(\.description).joined(separator: " … ") : f.sizes.map(\.description).joined(separator: " ")
                out.append("    \(f.fourCC)  \(sizes)")
            }
            if v.role == .camera { out.append("    osh-edge takes: " + Probe.cameraPlan(v, encoders: video, boardModel: boardModel)) }
        }
        out.append("")
        out.append("Camera sensors (libcamera)")
        if cameraSensors.isEmpty { out.append("  none") }
        for m in cameraSensors {
            out.append(
                "  \(m.sensors.joined(separator: ", "))  \(m.driver) (\(m.model)) at \(m.path); V4L2 nodes \(m.videoNodes.joined(separator: " "))"
            )
            let ids = libcameraIds(m)
            if libcameraLayerLoaded, !ids.isEmpty {
                out.append("    libcamera camera \(ids.map { "'\($0)'" }.joined(separator: ", ")): its nodes above answer as it")
            } else if libcameraLayerLoaded {
                out.append(
                    "    libcamera did not list it here: another program is using the camera (the running agent?); "
                        + "its nodes above answer as the raw driver. Stop that program to see libcamera's id")
            } else if let layer = libcameraLayer {
                out.append("    reached through libcamera's V4L2 layer (\(layer)): [camera] device = \"libcamera\" (or \"auto\")")
            } else {
                out.append(
                    "    needs libcamera's V4L2 layer, not installed: apt install libcamera-v4l2 libcamera-ipa (Debian), "
                        + "apt install libcamera-v4l2 (Raspberry Pi OS)")
            }
        }
        out.append("")
        out.append("Config")
        for n in configNotes { out.append("  note: \(n)") }
        return out.joined(separator: "\n") + "\n" + configSections
    }

    /// libcamera's ids for the sensor `m`: its nodes' QUERYCAP card where libcamera's layer
    /// answered them (none when the layer is not loaded or libcamera did not take the camera).
    func libcameraIds(_ m: MediaDeviceInfo) -> [String] {
        Set(video.filter { $0.driver == LibcameraLayer.driverName && m.videoNodes.contains($0.path) }.map(\.card)).sorted()
    }

    /// One JSON object.
    public var json: String {
        let buf = ByteBuffer(capacity: 4096)
        var w = JSONWriter(buf)
        w.beginObject()
        w.key("i2c"); w.beginArray()
        for b in buses {
            w.beginObject()
            w.key("bus"); w.int(b.number)
            w.key("device"); w.string("/dev/i2c-\(b.number)")
            if let e = b.error { w.key("error"); w.string(e) }
            w.key("chips"); w.beginArray()
            for c in b.chips {
                w.beginObject()
                w.key("name"); w.string(c.name)
                w.key("kind"); w.string(c.kind.rawValue)
                w.key("address"); w.string(Probe.hex(c.address))
                if let r = c.idRegister { w.key("idRegister"); w.string(Probe.hex(r)) }
                if let v = c.idValue { w.key("id"); w.string(Probe.hex(v)) }
                w.key("identifiedBy"); w.string(c.identifiedByID ? (c.idRegister == nil ? "command" : "id") : "address")
                if !c.note.isEmpty { w.key("note"); w.string(c.note) }
                w.endObject()
            }
            w.endArray()
            w.key("unidentified"); w.beginArray()
            for u in b.unidentified {
                w.beginObject()
                w.key("address"); w.string(Probe.hex(u.address))
                w.key("reads"); w.beginArray(); for r in u.reads { w.string(r) }; w.endArray()
                w.endObject()
            }
            w.endArray()
            if !b.faults.isEmpty { w.key("faults"); w.beginArray(); for f in b.faults { w.string(f) }; w.endArray() }
            if b.agentUsesIt { w.key("agentUsesIt"); w.bool(true) }
            if !b.notDone.isEmpty { w.key("notDone"); w.beginArray(); for n in b.notDone { w.string(n) }; w.endArray() }
            if !b.barometerDumps.isEmpty {
                w.key("dump"); w.beginArray()
                for d in b.barometerDumps {
                    w.beginObject()
                    w.key("chip"); w.string(d.identity.name)
                    w.key("address"); w.string(Probe.hex(d.address))
                    w.key("calibration"); w.string(d.calibrationHex)
                    w.key("data"); w.string(d.rawHex)
                    if let r = d.decoded { w.key("decoded"); w.rawJSON(r.json) }
                    if let e = d.error { w.key("error"); w.string(e) }
                    w.endObject()
                }
                w.endArray()
            }
            w.endObject()
        }
        w.endArray()
        if let h = i2cHint { w.key("i2cHint"); w.string(h) }
        w.key("audio"); w.beginArray()
        for a in audio {
            w.beginObject(); w.key("device"); w.string(a.name); w.key("description"); w.string(a.description); w.endObject()
        }
        w.endArray()
        w.key("serialPorts"); w.beginArray()
        for p in serialPorts {
            w.beginObject()
            w.key("path"); w.string(p.path)
            w.key("device"); if let d = p.device { w.string(d) } else { w.null() }
            w.key("heldBy"); w.beginArray(); for h in p.holders { w.string(h.description) }; w.endArray()
            w.endObject()
        }
        w.endArray()
        w.key("gpsd"); w.bool(gpsdAnswers)
        w.key("video"); w.beginArray()
        for v in video {
            w.beginObject()
            w.key("path"); w.string(v.path)
            w.key("role"); w.string(v.role.rawValue)
            w.key("card"); w.string(v.card)
            w.key("driver"); w.string(v.driver)
            if !v.note.isEmpty { w.key("note"); w.string(v.note) }
            w.key("formats"); w.beginArray()
            for f in v.formats {
                w.beginObject()
                w.key("fourcc"); w.string(f.fourCC.description)
                w.key("range"); w.bool(f.isRange)
                w.key("sizes"); w.beginArray(); for s in f.sizes { w.string(s.description) }; w.endArray()
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.key("cameraSensors"); w.beginArray()
        for m in cameraSensors {
            w.beginObject()
            w.key("media"); w.string(m.path)
            w.key("driver"); w.string(m.driver)
            w.key("sensors"); w.beginArray(); for n in m.sensors { w.string(n) }; w.endArray()
            w.key("nodes"); w.beginArray(); for n in m.videoNodes { w.string(n) }; w.endArray()
            w.key("libcameraIds"); w.beginArray(); for i in libcameraIds(m) { w.string(i) }; w.endArray()
            w.endObject()
        }
        w.endArray()
        w.key("libcameraLayer"); if let l = libcameraLayer { w.string(l) } else { w.null() }
        w.key("notes"); w.beginArray(); for n in configNotes { w.string(n) }; w.endArray()
        w.key("config"); w.string(configSections)
        w.endObject()
        return buf.string
    }
}
