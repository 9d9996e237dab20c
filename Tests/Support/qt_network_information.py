#!/usr/bin/python3
"""A real Qt 6 program reading NetworkManager: QNetworkInformation with the networkmanager backend (PyQt6).

Prints one JSON line with what it reports at start ("event": "initial"), then one for each change signal
("reachability", "metered", "medium"), each with the full state; exits after TIMEOUT seconds (argv[1], default 60)
or when stdin closes. Run with QT_QPA_PLATFORM=offscreen; DBUS_SYSTEM_BUS_ADDRESS says which bus it reads.
"""
import json
import sys

from PyQt6.QtCore import QCoreApplication, QObject, QSocketNotifier, QTimer, pyqtSlot
from PyQt6.QtNetwork import QNetworkInformation


class Reporter(QObject):
    """Prints the full state after each change signal, once the event that raised it is handled (Qt's
    backend updates the medium after it signalled the metered change of the same PropertiesChanged). PyQt6 6.4
    cannot connect transportMediumChanged at all (it has no conversion for QNetworkInformation::TransportMedium):
    the medium is read after each of the other signals, and after transportMediumChanged where PyQt6 can
    connect it."""

    def __init__(self, info):
        super().__init__()
        self.info = info

    def report(self, event):
        info = self.info
        print(json.dumps({
            "event": event,
            "backend": info.backendName(),
            "reachability": info.reachability().name,
            "metered": info.isMetered(),
            "medium": info.transportMedium().name,
            "captivePortal": info.isBehindCaptivePortal(),
        }), flush=True)

    @pyqtSlot()
    def reachability(self):
        QTimer.singleShot(0, lambda: self.report("reachability"))

    @pyqtSlot()
    def metered(self):
        QTimer.singleShot(0, lambda: self.report("metered"))

    @pyqtSlot()
    def medium(self):
        QTimer.singleShot(0, lambda: self.report("medium"))


def main():
    app = QCoreApplication(sys.argv)
    if not QNetworkInformation.loadBackendByName("networkmanager"):
        print(json.dumps({"event": "error", "backends": QNetworkInformation.availableBackends()}), flush=True)
        return 2
    info = QNetworkInformation.instance()
    reporter = Reporter(info)
    reporter.report("initial")
    info.reachabilityChanged.connect(reporter.reachability)
    info.isMeteredChanged.connect(reporter.metered)
    try:
        info.transportMediumChanged.connect(reporter.medium)
    except TypeError:
        pass
    QTimer.singleShot(int(float(sys.argv[1]) if len(sys.argv) > 1 else 60) * 1000, app.quit)
    stdin = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    stdin.activated.connect(lambda *_: app.quit() if not sys.stdin.buffer.read1(4096) else None)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
