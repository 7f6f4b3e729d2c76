import OSHCore

// The driver table: every I²C chip osh-edge drives, by device class. Each entry is declared by its
// driver (identity, how the driver is made, what `decode` takes); the configuration's chip names,
// `auto`, `osh-edge probe`, `decode`, the usage text and the simulators read these lists and
// nothing else. A new chip is its own files and one line here.

public enum ChipTable {
    /// Barometers, in the order `auto` tries them.
    public static let barometers: [BarometerChip] = [
        BMx280Driver.bmp280Chip,
        BMx280Driver.bme280Chip,
        BMP3Driver.bmp388Chip,
        BMP3Driver.bmp390Chip,
        LPS22HBDriver.chip,
        LPS25HDriver.chip,
        BMP58xDriver.bmp581Chip,
        BMP58xDriver.bmp585Chip,
        DPS310Driver.chip,
    ]

    /// IMUs in probing order (the MPU family before the ICM-20948: both sit at 0x68/0x69, and
    /// WHO_AM_I at 0x75 is the cheaper test). The ICM-42688-P reads WHO_AM_I at 0x75 too, so it
    /// follows the MPUs, which then never see its bank check (a read of 0x76), and comes before
    /// the ICM-20948, whose ID read may write 0x7F — a register the ICM-42688-P does not have there.
    public static let imus: [IMUChip] = [
        MPUDriver.mpu9250Chip,
        MPUDriver.mpu6500Chip,
        MPUDriver.mpu6050Chip,
        ICM42688Driver.chip,
        ICM20948Driver.chip,
        LSM6DSOXDriver.chip,
        LSM9DS1Driver.chip,  // at the LSM6DSOX's addresses, same ID register (0x68, not 0x6C, tells them apart); before the BNO055
        BNO055Driver.chip,
    ]

    /// Magnetometers: on the bus (probe finds them), and inside an IMU (reached through it).
    public static let magnetometers: [I2CChipIdentity] = [
        SeparateMagnetometer.lis3mdl,
        MPUDriver.ak8963,
        ICM20948Driver.ak09916,
    ]

    /// Humidity and temperature chips, in the order `auto` tries them.
    public static let hygrometers: [HygrometerChip] = [
        SHT4xDriver.chip,
        HTS221Driver.chip,
    ]

    /// The names the configuration accepts, by class.
    public static let known = KnownChips(
        barometers: barometers.map(\.identity), imus: imus.map(\.identity),
        magnetometers: magnetometers, hygrometers: hygrometers.map(\.identity))
}
