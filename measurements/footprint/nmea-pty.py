# nmea-pty.py: GGA+RMC at 1 Hz into a pty whose slave is linked at /tmp/mem/gps-tty (a GPS for `run`).
import os, pty, time, tty
m, s = pty.openpty()
tty.setraw(s)
path0 = os.ttyname(s)
path = path0; os.close(s)
if os.path.lexists('/tmp/mem/gps-tty'): os.unlink('/tmp/mem/gps-tty')
os.symlink(path, '/tmp/mem/gps-tty')
def nmea(body):
    c = 0
    for ch in body.encode(): c ^= ch
    return ('$%s*%02X\r\n' % (body, c)).encode()
while True:
    t = time.gmtime()
    hms = time.strftime('%H%M%S.00', t); dmy = time.strftime('%d%m%y', t)
    os.write(m, nmea('GPGGA,%s,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,' % hms))
    os.write(m, nmea('GPRMC,%s,A,4807.038,N,01131.000,E,000.0,000.0,%s,,,A' % (hms, dmy)))
    try:
        while True:
            import select
            r,_,_ = select.select([m],[],[],0)
            if not r: break
            os.read(m, 4096)
    except OSError: pass
    time.sleep(1)
