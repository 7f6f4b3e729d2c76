// The C half of the MQTT client (OSHPlatform/MQTT/MQTTClient.swift).
//
// libmosquitto's connect with MQTT 5 properties (the session expiry) is blocking: name
// resolution, the TCP connect and the TLS handshake run inside it, and a broker that never
// answers holds it for the kernel's SYN timeout. So it runs on a short-lived thread of its own,
// and the event loop does not touch the handle until that thread has returned and signalled an
// eventfd (the eventfd's write and read order the two threads' memory). Only API present in
// libmosquitto 2.0.11 (Debian bookworm) is used.
#ifndef OSH_CMQTTSHIM_H
#define OSH_CMQTTSHIM_H

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <stddef.h>
#include <stdint.h>

typedef struct osh_mqtt_connect {
    struct mosquitto *mosq;
    char *host;
    int port;
    int keepalive;
    uint32_t session_expiry;
    int event_fd;
    int rc;       // MOSQ_ERR_* once done
    int err;      // errno when rc == MOSQ_ERR_ERRNO
    int refs;     // the thread's and the caller's
    int abandoned;  // the caller let go while the thread ran: the last one out destroys the client
    char error[256];  // libmosquitto's last error line during the connect (OpenSSL's reason for a TLS failure)
} osh_mqtt_connect;

/// Keeps libmosquitto's error lines for `osh_mqtt_connect_finish` (set once, before any connect).
void osh_mqtt_capture_errors(struct mosquitto *mosq);

/// Starts the connect on its own thread; returns the handle (its `event_fd` becomes readable when
/// the connect returned), or NULL with errno set.
osh_mqtt_connect *osh_mqtt_connect_start(
    struct mosquitto *mosq, const char *host, int port, int keepalive, uint32_t session_expiry);

int osh_mqtt_connect_fd(const osh_mqtt_connect *c);

/// After `event_fd` was readable: the connect's MOSQ_ERR_*, errno and libmosquitto's last error
/// line (`error`, `len` bytes); releases the handle.
int osh_mqtt_connect_finish(osh_mqtt_connect *c, int *err, char *error, size_t len);

/// The caller gives up on a connect that may still run (a stop): the client is destroyed once the
/// thread has returned, by whichever of the two lets go last. The loop does not wait for it.
void osh_mqtt_connect_abandon(osh_mqtt_connect *c);

/// A PUBLISH at QoS `qos` with MQTT 5 properties: a content type, and correlation data when given.
int osh_mqtt_publish(
    struct mosquitto *mosq, int *mid, const char *topic, const void *payload, int len, int qos,
    const char *content_type, const void *correlation, uint16_t correlation_len);

/// libmosquitto's last error line logged on the calling thread (a TLS handshake that fails after
/// the connect, on the loop), then forgotten; its length, 0 when there is none.
size_t osh_mqtt_take_error(char *error, size_t len);

/// A PUBLISH's correlation data (MQTT 5), copied into `out` (at most `len` bytes); its length, 0
/// when it has none.
size_t osh_mqtt_correlation(const mosquitto_property *props, void *out, size_t len);

/// A TLS context that accepts the broker by its public key alone, as libcurl's
/// CURLOPT_PINNEDPUBLICKEY does for the node: the SHA-256 of the certificate's
/// SubjectPublicKeyInfo must be one of `pins` ("sha256//<base64>", several separated by ';').
/// The check runs inside the handshake, so a broker with another key never sees CONNECT (and so
/// never the credentials). Returns the context (an SSL_CTX, one reference the caller owns), or
/// NULL when OpenSSL cannot make one.
void *osh_mqtt_pin_context(const char *pins);

/// Hands the pinned context to the client (libmosquitto takes its own reference and applies none
/// of its defaults to it: no CA store, no host-name check; the key is the identity).
int osh_mqtt_pin_attach(struct mosquitto *mosq, void *ctx);

/// The key the broker last presented, "sha256//<base64>", for the message that refuses it; its
/// length, 0 when no handshake has reached the check.
size_t osh_mqtt_pin_presented(void *ctx, char *out, size_t len);

/// Drops the caller's reference to the context.
void osh_mqtt_pin_release(void *ctx);

#endif
