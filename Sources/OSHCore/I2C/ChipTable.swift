// Every I²C chip osh-edge drives, by device class: how each is recognised (addresses, ID
// register). The config's chip names, the drivers' tables (which also make the driver) and
// `osh-edge probe` all read these lists; names are compared through `KnownChips.canonical`.

public enum ChipTable {
    public static let bmp280 = I2CChipIdentity(
        name: "BMP280", kind: .barometer, addresses: [0x76, 0x77], idRegister: 0xD0,
        idValues: [0x58, 0x56, 0x57],
        note: "0x76 with SDO to GND (most purple breakouts), 0x77 with SDO high (Adafruit)")
    public static let bme280 = I2CChipIdentity(
        name: "BME280", kind: .barometer, addresses: [0x76, 0x77], idRegister: 0xD0,
        idValues: [0x60],
        note: "BMP280 plus humidity; many boards sold as BME280 carry a BMP280 (ID 0x58)")
    public static let bmp388 = I2CChipIdentity(
        name: "BMP388", kind: .barometer, addresses: [0x77, 0x76], idRegister: 0x00,
        idValues: [0x50], note: "0x77 with SDO high (Adafruit default), 0x76 with SDO to GND")
    public static let bmp390 = I2CChipIdentity(
        name: "BMP390", kind: .barometer, addresses: [0x77, 0x76], idRegister: 0x00,
        idValues: [0x60], note: "0x77 with SDO high (Adafruit default), 0x76 with SDO to GND")
    public static let lps22hb = I2CChipIdentity(
        name: "LPS22HB", kind: .barometer, addresses: [0x5D, 0x5C], idRegister: 0x0F,
        idValues: [0xB1], note: "0x5D with SA0 high (Adafruit default), 0x5C with SA0 low")
    public static let mpu6050 = I2CChipIdentity(
        name: "MPU6050", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x68],
        note: "6-axis, no magnetometer (an MPU-9150 also answers 0x68)")
    public static let mpu6500 = I2CChipIdentity(
        name: "MPU6500", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x70],
        note: "6-axis, no magnetometer")
    public static let mpu9250 = I2CChipIdentity(
        name: "MPU9250", kind: .imu, addresses: [0x68, 0x69], idRegister: 0x75, idValues: [0x71, 0x73],
        note: "9-axis: AK8963 magnetometer at 0x0C, reached in bypass mode (0x73 is the MPU-9255)")
    public static let icm20948 = I2CChipIdentity(
        name: "ICM20948", kind: .imu, addresses: [0x69, 0x68], idRegister: 0x00, idValues: [0xEA],
        note: "9-axis: AK09916 magnetometer read through the chip's own I²C master")
    public static let lsm6dsox = I2CChipIdentity(
        name: "LSM6DSOX", kind: .imu, addresses: [0x6A, 0x6B], idRegister: 0x0F, idValues: [0x6C],
        note: "6-axis; pair it with a LIS3MDL magnetometer (0x1C/0x1E) for heading")
    public static let bno055 = I2CChipIdentity(
        name: "BNO055", kind: .imu, addresses: [0x28, 0x29], idRegister: 0x00, idValues: [0xA0],
        note: "on-chip fusion; it stretches the I²C clock, which the Pi's hardware I²C mishandles "
        + "(corrupt bytes, timeouts): add dtparam=i2c_arm_baudrate=10000 to /boot/firmware/config.txt "
        + "(≈25 Hz reads at most) or use the i2c-gpio overlay")
    public static let ak8963 = I2CChipIdentity(
        name: "AK8963", kind: .magnetometer, addresses: [0x0C], idRegister: 0x00, idValues: [0x48],
        note: "inside the MPU-9250; visible on the bus only while the MPU-9250 is in bypass mode")
    public static let lis3mdl = I2CChipIdentity(
        name: "LIS3MDL", kind: .magnetometer, addresses: [0x1C, 0x1E], idRegister: 0x0F, idValues: [0x3D])

    /// Barometers, in the order `auto` tries them.
    public static let barometers: [I2CChipIdentity] = [bmp280, bme280, bmp388, bmp390, lps22hb]
    /// IMUs in probing order (MPU family before the ICM-20948: both sit at 0x68/0x69, and
    /// WHO_AM_I at 0x75 is the cheaper test).
    public static let imus: [I2CChipIdentity] = [mpu9250, mpu6500, mpu6050, icm20948, lsm6dsox, bno055]
    /// Magnetometers visible on the bus (the AK09916 is reached only through its ICM-20948).
    public static let magnetometers: [I2CChipIdentity] = [lis3mdl, ak8963]
}
