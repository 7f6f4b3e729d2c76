import OSHCore
import OSHPlatform

/// Observations (and camera frames) as MQTT 5 PUBLISHes at QoS 1, not retained, one per flush
/// and datastream as the HTTP transport POSTs them; the PUBACK's reason code becomes the status
/// the publisher's verdicts read, so a rejected payload is dropped and counted and a broker
/// outage backs off and spools exactly as an HTTP one does.
final class MQTTNodeClient: PublisherTransport, VideoTransport {
    let client: MQTTClient
    let topics: MQTTTopics
    /// Named in every outcome: the publisher's log says which broker did not answer.
    private let brokerName: String
    /// Topic strings by datastream and media type, made once.
    private var topicCache: [String: String] = [:]

    init(client: MQTTClient, topics: MQTTTopics) {
        self.client = client
        self.topics = topics
        brokerName = client.options.brokerName
    }

    func postObservations(
        datastreamID: String, contentType: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void
    ) {
        publish(datastreamID: datastreamID, mediaType: contentType, body: body, completion: completion)
    }

    func postVideo(datastreamID: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void) {
        publish(datastreamID: datastreamID, mediaType: MediaType.sweBinary, body: body, completion: completion)
    }

    /// The link answers when the client is connected (a CONNACK came and the socket is up).
    func probe(completion: @escaping (TransportOutcome) -> Void) {
        completion(
            client.state == .connected
                ? TransportOutcome(status: 200, peer: brokerName)
                : TransportOutcome(status: 0, transportError: client.notConnectedReason, peer: brokerName))
    }

    private func publish(
        datastreamID: String, mediaType: String, body: ByteBuffer, completion: @escaping (TransportOutcome) -> Void
    ) {
        let key = datastreamID + " " + mediaType
        let topic: String
        if let t = topicCache[key] {
            topic = t
        } else {
            topic = topics.observations(datastreamID: datastreamID, mediaType: mediaType)
            topicCache[key] = topic
        }
        // OSH's service reads the payload by the datastream's encoding (AUTO); the content type
        // is for brokers and subscribers in between.
        client.publish(
            topic: topic, payload: UnsafeRawBufferPointer(start: body.base, count: body.count), contentType: mediaType
        ) { [brokerName] result in
            var o = Self.outcome(result, topic: topic)
            o.peer = brokerName
            completion(o)
        }
    }

    /// A PUBACK reason code as the HTTP status the publisher's verdicts expect: success (and
    /// "no matching subscribers", which a plain broker says when nothing listens yet) is 200;
    /// a payload the service cannot read is 400 (rejected, counted, not resent); a topic it does
    /// not know is 404 (the datastream is gone: register again); not authorised is 403 (an ACL
    /// refuses this topic; resending cannot help); quota exceeded is 429 and any other failure
    /// 500 (kept and resent after the backoff). No PUBACK is status 0, as a lost HTTP response.
    static func outcome(_ r: MQTTPublishResult, topic: String) -> TransportOutcome {
        switch r {
        case .failed(let why):
            return TransportOutcome(status: 0, transportError: why)
        case .acknowledged(let rc):
            let status: Int
            switch rc {
            case 0..<0x80: status = 200
            case 0x99: status = 400  // payload format invalid
            case 0x90: status = 404  // topic name invalid
            case 0x87: status = 403  // not authorised
            case 0x97: status = 429  // quota exceeded
            case 0x80, 0x83: status = 500  // unspecified, implementation specific
            default: status = 400
            }
            let body =
                status == 200 ? [] : Array("the MQTT broker answered PUBACK reason code \(rc) for \(topic)".utf8)
            return TransportOutcome(status: status, body: body)
        }
    }
}
