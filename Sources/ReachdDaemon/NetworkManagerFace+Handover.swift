import CReachdBus
import CSystemd
import ReachdServiceKit
import ReachdSystem
#if canImport(Glibc)
import Glibc
#endif

/// Stepping back for NetworkManager. NetworkManager asks for its name once, neither queueing nor replacing, and
/// exits when it is taken; so before it starts (ExecStartPre= of systemd/NetworkManager.service.d/
/// reachd-networkmanager-face.conf), root asks the face to give the name up: `StepBack`. The face asks for the
/// name again, queued, once someone else owns it (the bus gives it back when NetworkManager quits), or after
/// `stepBackSeconds` when nobody took it (NetworkManager failed to start). Each step-back owns its wait: a newer one
/// (NetworkManager started again) replaces the older, whose timer then does nothing.
extension NetworkManagerFace {
    /// `org.reachd.NetworkManagerFace1.StepBack`, root only: releases the name, then replies.
    func stepBack(_ call: OpaquePointer, on bus: OpaquePointer) -> Int32 {
        guard BusMessage.senderIDs(of: call)?.uid == 0 else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.AccessDenied",
                                         message: "only root may ask reachd's NetworkManager face to step back")
        }
        let rc = sd_bus_release_name(bus, Self.name)
        guard rc >= 0 else {
            return BusMessage.replyError(call, name: "org.freedesktop.DBus.Error.Failed", message: "\(BusError(call: "sd_bus_release_name", code: rc))")
        }
        stepBacks += 1
        let this = stepBacks
        pendingStepBack = this
        logger.notice("D-Bus: the NetworkManager face gave \(Self.name) up for NetworkManager")
        let seconds = Self.stepBackSeconds
        Task { [self] in
            try? await sleeper.sleep(for: .seconds(seconds))
            perform { face in
                guard face.pendingStepBack == this else { return }
                face.logger.notice("D-Bus: nobody took \(Self.name) within \(seconds) s; the NetworkManager face asks for it again")
                face.askAgain()
            }
        }
        return reachd_nm_face_reply_empty(call)
    }

    /// NameOwnerChanged of the name: someone else took it after the face stepped back.
    func nameOwnerChanged(_ message: OpaquePointer) {
        var name: UnsafePointer<CChar>?, old: UnsafePointer<CChar>?, new: UnsafePointer<CChar>?
        let s = CChar(UInt8(ascii: "s"))
        guard pendingStepBack != nil, sd_bus_message_read_basic(message, s, &name) > 0, sd_bus_message_read_basic(message, s, &old) > 0,
              sd_bus_message_read_basic(message, s, &new) > 0, let new, new.pointee != 0,
              let bus = sd_bus_message_get_bus(message) else { return }
        var unique: UnsafePointer<CChar>?
        if sd_bus_get_unique_name(bus, &unique) >= 0, let unique, strcmp(unique, new) == 0 { return }
        askAgain()
    }

    private func askAgain() {
        pendingStepBack = nil
        do { try requestName() } catch { logger.warning("D-Bus: \(error)") }
    }
}
