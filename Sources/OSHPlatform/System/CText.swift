extension String {
    /// What a C function wrote into `buffer`: the bytes before the first NUL (all of them when
    /// there is none), as UTF-8.
    init(cBuffer buffer: [CChar]) {
        self = buffer.withUnsafeBytes { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }
}
